/**
 * TEST SEAM. Baileys >= 7.0.0-rc10 verifies the Noise certificate chain against a pinned WhatsApp
 * root key (`WA_CERT_DETAILS.PUBLIC_KEY`, a mutable export). A test process that talks to the
 * fake WhatsApp server points that key at the fake root here, through the same module instance
 * the QR connection uses. Production code never calls this.
 *
 * @returns a function that restores the previous key
 */
import { WA_CERT_DETAILS } from "baileys"

export const useFakeWhatsAppRoot = (publicKey: Uint8Array): () => void => {
  const previous = WA_CERT_DETAILS.PUBLIC_KEY
  WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(publicKey)
  return () => {
    WA_CERT_DETAILS.PUBLIC_KEY = previous
  }
}
