/**
 * AES-256-GCM for secrets at rest that must stay usable (webhook endpoint secrets sign deliveries,
 * a QR channel's auth state logs in again), so they are encrypted, not hashed. The keys are
 * `SecretsConfig.Keyring` (the current key seals; previous ones still open). Format:
 * `v1:<iv>:<tag>:<data>`, each part base64.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"

/** Prefix of every sealed value; plaintext JSON never starts with it. */
export const PREFIX = "v1:"

/** Whether `text` is in the sealed format (it may still fail to open, e.g. under another key). */
export const isSealed = (text: string): boolean => text.startsWith(PREFIX)

export const seal = (key: Buffer, plaintext: string): string => {
  const iv = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", key, iv)
  const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return `${PREFIX}${iv.toString("base64")}:${cipher.getAuthTag().toString("base64")}:${data.toString("base64")}`
}

/** Throws on an unknown format, another key or tampering. */
export const open = (key: Buffer, sealed: string): string => {
  const [version, iv, tag, data] = sealed.split(":")
  if (version !== "v1" || !iv || !tag || !data) throw new Error("unknown secret format")
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"))
  decipher.setAuthTag(Buffer.from(tag, "base64"))
  return Buffer.concat([decipher.update(Buffer.from(data, "base64")), decipher.final()]).toString("utf8")
}

/** Whether `key` opens `sealed` (never throws). */
export const opens = (key: Buffer, sealed: string): boolean => {
  try {
    open(key, sealed)
    return true
  } catch {
    return false
  }
}
