/**
 * JID handling: how a QR channel's addresses (E.164 numbers, LIDs) map to WhatsApp's JIDs and back.
 * Pure functions, and one look-up in the link's LID store.
 */
import { jidDecode, type WASocket } from "baileys"
import { Effect } from "effect"
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

/**
 * The number the socket's LID store (Baileys' `signalRepository.lidMapping`, over the channel's
 * `lid-mapping` keys) holds for a LID; `null` when none is known or the store cannot be read (the
 * sender then stays known by its LID, merged later when WhatsApp reveals the number).
 */
export const phoneOfLid = (socket: WASocket | undefined, whatsappLid: string): Effect.Effect<string | null> =>
  socket === undefined ?
    Effect.succeed(null) :
    Effect.tryPromise(() => socket.signalRepository.lidMapping.getPNForLID(`${whatsappLid}@lid`)).pipe(
      Effect.timeout("5 seconds"),
      Effect.map((pn) => jidToE164(pn) ?? null),
      Effect.catchAll((error) => Effect.as(Effect.logWarning("qr LID store not read", error), null))
    )
