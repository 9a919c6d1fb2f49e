/**
 * The typing indicator of a QR channel, pure (docs/QR-CHANNELS.md, "Typing indicator"). A person
 * opening a chat types before the first message shows; a number whose first messages land out of
 * nowhere, at once, looks automated. So a conversation's first message after a pause is preceded by
 * WhatsApp's "typing..." (`composing`) for a time that grows with its length, then the message,
 * then `paused`. Later messages of a running conversation go without it (a person already in the
 * chat answers at once), and so do reactions (nobody types a reaction).
 *
 * The typing runs inside the channel's send slot, and is bounded so that it never stalls the
 * channel's other conversations by more than `TYPING_MAX_MS` minus the slot's interval (0.5 mps:
 * at most 1 s more than the 2 to 3 s the slot already waits).
 */
import type { MessageContent } from "@switchboard/domain"
import { Clock, Effect } from "effect"

/** The shortest typing shown (a one-word message). */
export const TYPING_MIN_MS = 600
/** The longest typing shown, whatever the message's length. */
export const TYPING_MAX_MS = 3_000
/** Each character adds this (about 28 characters a second: a quick typist, capped by `TYPING_MAX_MS`). */
export const TYPING_MS_PER_CHARACTER = 35
/** A conversation with no message sent by the channel for this long types again before its next one. */
export const TYPING_AFTER_PAUSE_MS = 10 * 60_000

/** How long "typing..." shows before a message of `length` characters (code points). */
export const typingDurationMs = (length: number): number =>
  Math.min(
    TYPING_MAX_MS,
    Math.max(TYPING_MIN_MS, Math.round(TYPING_MIN_MS + Math.max(0, length) * TYPING_MS_PER_CHARACTER))
  )

/**
 * What a person would type for `content` (a text when absent: `text` is what is sent): the text's
 * or caption's length; a location or a file without caption types the shortest; a reaction does
 * not type (`undefined`).
 */
export const typedLength = (text: string, content: MessageContent.OutgoingBody | undefined): number | undefined => {
  switch (content?._tag) {
    case undefined:
    case "text":
      return [...text].length
    case "reaction":
      return undefined
    case "media":
      return content.caption === null ? 0 : [...content.caption].length
    default:
      return 0
  }
}

/**
 * Whether a message to a chat whose last message from this channel went at `lastSentAt` (epoch ms;
 * `undefined`: none on this connection) is a conversation's first after a pause.
 */
export const firstAfterPause = (lastSentAt: number | undefined, now: number): boolean =>
  lastSentAt === undefined || now - lastSentAt >= TYPING_AFTER_PAUSE_MS

/**
 * The typing to show before sending `text`/`content` to a chat last written at `lastSentAt`:
 * its duration in ms, or `undefined` for none (turned off, a running conversation, a reaction).
 */
export const typingBefore = (options: {
  readonly enabled: boolean
  readonly text: string
  readonly content: MessageContent.OutgoingBody | undefined
  readonly lastSentAt: number | undefined
  readonly now: number
}): number | undefined => {
  if (!options.enabled || !firstAfterPause(options.lastSentAt, options.now)) return undefined
  const length = typedLength(options.text, options.content)
  return length === undefined ? undefined : typingDurationMs(length)
}

/** Chats remembered per connection at most (the oldest is forgotten first: it types again). */
const MAX_CHATS = 10_000

/** WhatsApp's chat states, as Baileys sends them (`sendPresenceUpdate`). */
export type ChatState = (state: "composing" | "paused", jid: string) => Promise<void>

/**
 * A connection's typing around each send to `jid`: `before` shows `composing` for the typing's
 * duration when `typingBefore` says so; `after` ends it with `paused` and, when the send went, counts
 * the chat as written. A chat state WhatsApp does not take never stops the send.
 */
export const makeTyping = (enabled: boolean) => {
  const lastSent = new Map<string, number>()
  /** chats showing "typing..." now */
  const typing = new Set<string>()
  const state = (chatState: ChatState, s: "composing" | "paused", jid: string) =>
    Effect.ignore(Effect.tryPromise(() => chatState(s, jid)))
  const before = (
    jid: string,
    message: { readonly text: string; readonly content?: MessageContent.OutgoingBody | undefined },
    chatState: ChatState
  ) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const ms = typingBefore({
        enabled,
        text: message.text,
        content: message.content,
        lastSentAt: lastSent.get(jid),
        now
      })
      if (ms === undefined) return
      typing.add(jid)
      yield* state(chatState, "composing", jid)
      yield* Effect.sleep(ms)
    })
  const after = (jid: string, sent: boolean, chatState: ChatState) =>
    Effect.gen(function*() {
      if (typing.delete(jid)) yield* state(chatState, "paused", jid)
      if (!sent) return
      lastSent.delete(jid)
      if (lastSent.size >= MAX_CHATS) lastSent.delete(lastSent.keys().next().value!)
      lastSent.set(jid, yield* Clock.currentTimeMillis)
    })
  return { before, after }
}
