/**
 * JID handling: how a QR channel's addresses (E.164 numbers, LIDs) map to WhatsApp's JIDs and back.
 * Pure functions.
 */
import { jidDecode } from "baileys"
import type { InboundRef } from "../ChannelProvider.js"

/** `15551234567@s.whatsapp.net` (or `...:7@...`) -> `+15551234567`; a LID or group jid -> `undefined`. */
export const jidToE164 = (jid: string | null | undefined): string | undefined => {
  const decoded = jid ? jidDecode(jid) : undefined
  return decoded?.server === "s.whatsapp.net" && /^\d{6,15}$/.test(decoded.user) ? `+${decoded.user}` : undefined
}

/** `+15551234567` -> `15551234567@s.whatsapp.net` */
export const e164ToJid = (e164: string): string => `${e164.replace(/^\+/, "")}@s.whatsapp.net`

/**
 * The chat a read receipt goes to: the sender's LID when we know it (WhatsApp addresses direct
 * chats by LID), else its number; `undefined` when neither is recorded.
 */
export const readerJid = (sender: Pick<InboundRef, "phoneNumber" | "whatsappLid">): string | undefined =>
  sender.whatsappLid !== null ? `${sender.whatsappLid}@lid` : sender.phoneNumber !== null
    ? e164ToJid(sender.phoneNumber)
    : undefined
