/**
 * The messages WhatsApp wraps in other messages, and the ones that point at another message
 * (docs/QR-CHANNELS.md "Wrappers"). Every `FutureProofMessage` member of WAProto's `Message` is a
 * wrapper whose `message` is what the contact sent; `open` takes them off (nested too), so the
 * translation sees the content. `referredId` names the message a content refers to: a quote, the
 * parent of an associated child (an album's item, an event's cover), or the target of a kind we
 * record as `unsupported` (a pin, a poll vote, an encrypted edit or reaction), so nothing is left
 * as an empty message with no link; `mentionedJids` the people a content mentions. The list is checked against the proto Baileys ships
 * (`BaileysInbound.test.ts`): an upgrade that adds a wrapper fails that test until it is listed here.
 */
import type { proto } from "baileys"

/** Every `FutureProofMessage` member of `proto.Message`, with what it wraps. */
export const WRAPPERS = {
  ephemeralMessage: "a message in a disappearing-messages chat",
  viewOnceMessage: "a view-once message (first version)",
  viewOnceMessageV2: "a view-once message",
  viewOnceMessageV2Extension: "a view-once voice note",
  documentWithCaptionMessage: "a document with a caption",
  editedMessage: "an edit (a protocolMessage MESSAGE_EDIT inside)",
  associatedChildMessage: "a message attached to another (messageAssociation names the parent)",
  groupMentionedMessage: "a message that mentions a group",
  botInvokeMessage: "a message addressed to a Meta AI bot",
  botTaskMessage: "a bot's task message",
  botForwardedMessage: "a message a bot forwarded",
  lottieStickerMessage: "an animated (Lottie) sticker",
  eventCoverImage: "the cover image of an event (its parent is the event)",
  pollCreationOptionImageMessage: "the image of a poll option (its parent is the poll)",
  pollCreationMessageV4: "a poll (fourth version)",
  statusMentionMessage: "a mention in a status",
  groupStatusMentionMessage: "a mention of a group in a status",
  statusAddYours: "an \"add yours\" status prompt",
  groupStatusMessage: "a status posted to a group",
  groupStatusMessageV2: "a status posted to a group",
  limitSharingMessage: "a chat's sharing-limit setting",
  questionMessage: "a question (channels)",
  questionReplyMessage: "an answer to a question (channels)"
} as const satisfies Record<string, string>

export type Wrapper = keyof typeof WRAPPERS

const WRAPPER_NAMES = Object.keys(WRAPPERS) as ReadonlyArray<Wrapper>

type Members = Record<string, { readonly message?: proto.IMessage | null } | null | undefined>

/** At most this many wrappers deep (WhatsApp nests two or three; a loop must end). */
const MAX_DEPTH = 8

/** The message inside every wrapper (nested ones too), and the wrappers taken off, outermost first. */
export const open = (
  message: proto.IMessage | null | undefined
): { readonly content: proto.IMessage | undefined; readonly wrappers: ReadonlyArray<Wrapper> } => {
  let content = message ?? undefined
  const wrappers: Array<Wrapper> = []
  for (let depth = 0; content !== undefined && depth < MAX_DEPTH; depth++) {
    const members = content as Members
    const wrapper = WRAPPER_NAMES.find((name) => members[name]?.message)
    if (wrapper === undefined) break
    wrappers.push(wrapper)
    content = members[wrapper]!.message!
  }
  return { content, wrappers }
}

/** Kinds that point at another message by its key (recorded as `unsupported`, linked to it). */
const REFERRING: Record<string, string> = {
  keepInChatMessage: "key",
  pinInChatMessage: "key",
  pollUpdateMessage: "pollCreationMessageKey",
  encReactionMessage: "targetMessageKey",
  encCommentMessage: "targetMessageKey",
  encEventResponseMessage: "eventCreationMessageKey",
  secretEncryptedMessage: "targetMessageKey"
}

const nonEmpty = (
  id: string | null | undefined
): string | null => (id === undefined || id === null || id === "" ? null : id)

/**
 * The WhatsApp id of the message `content` (of kind `type`) refers to: the one it quotes, the one
 * it targets, or its parent (`messageContextInfo.messageAssociation`), in that order; `outer` is
 * the message before its wrappers were opened (the association may sit on either).
 */
export const referredId = (content: proto.IMessage, type: string, outer: proto.IMessage | null | undefined) => {
  const member = (content as Record<string, unknown>)[type] as
    | { readonly contextInfo?: proto.IContextInfo | null }
    | null
    | undefined
  const quoted = nonEmpty(member?.contextInfo?.stanzaId)
  if (quoted !== null) return quoted
  const keyField = REFERRING[type]
  if (keyField !== undefined) {
    const key = (member as Record<string, proto.IMessageKey | null | undefined> | null | undefined)?.[keyField]
    const target = nonEmpty(key?.id)
    if (target !== null) return target
  }
  return nonEmpty(content.messageContextInfo?.messageAssociation?.parentMessageKey?.id) ??
    nonEmpty(outer?.messageContextInfo?.messageAssociation?.parentMessageKey?.id)
}

/** The jids a content mentions (`@name` in a group: `contextInfo.mentionedJid` of its member). */
export const mentionedJids = (content: proto.IMessage, type: string): ReadonlyArray<string> => {
  const member = (content as Record<string, unknown>)[type] as
    | { readonly contextInfo?: proto.IContextInfo | null }
    | null
    | undefined
  return member?.contextInfo?.mentionedJid ?? []
}
