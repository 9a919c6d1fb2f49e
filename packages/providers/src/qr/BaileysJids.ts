/**
 * WhatsApp addresses (JIDs) as Baileys gives them, read into what we keep: a phone number (E.164,
 * `...@s.whatsapp.net`) or a LID (`...@lid`, WhatsApp's private id of a user), never a device.
 * Pure.
 */
import type { MessageContent } from "@switchboard/domain"
import { jidDecode } from "baileys"

export const E164_DIGITS = /^[1-9]\d{6,14}$/

/** The user part of a jid (no device), and its server. */
export const decode = (jid: string | null | undefined) => {
  if (!jid) return undefined
  const decoded = jidDecode(jid)
  return decoded?.user ? { user: decoded.user, server: decoded.server } : undefined
}

export const phoneOf = (jid: string | null | undefined): string | null => {
  const d = decode(jid)
  return d?.server === "s.whatsapp.net" && E164_DIGITS.test(d.user) ? `+${d.user}` : null
}

export const lidOf = (jid: string | null | undefined): string | null => {
  const d = decode(jid)
  return d?.server === "lid" ? d.user : null
}

/** The sender of a direct chat: the chat's jid and its alternative form (phone number or LID). */
export const senderOf = (
  key: { readonly remoteJid?: string | null | undefined; readonly remoteJidAlt?: string | null | undefined }
): MessageContent.InboundSender | null => {
  const phoneNumber = phoneOf(key.remoteJid) ?? phoneOf(key.remoteJidAlt)
  const whatsappLid = lidOf(key.remoteJid) ?? lidOf(key.remoteJidAlt)
  return phoneNumber === null && whatsappLid === null ? null : { phoneNumber, whatsappLid }
}
