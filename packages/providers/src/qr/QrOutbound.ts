/**
 * Outbound sends on a live QR connection: what Baileys is handed for each kind of message, and the
 * send itself (the recipient check, "typing...", the write to WhatsApp); also the one other request
 * we make of a sender's phone, to upload an inbound media again.
 */
import { GroupChats, LidAddress, MediaType, type MessageContent } from "@switchboard/domain"
import type { AnyMessageContent, WAMessage } from "baileys"
import { Clock, Duration, Effect, Exit } from "effect"
import type { Readable } from "node:stream"
import { isThrottled, MediaDownloadFailed } from "../ChannelProvider.js"
import type { QrConnectionEvent } from "./QrConnectionEvent.js"
import { e164ToJid } from "./QrJid.js"
import * as QrProtectionMetrics from "./QrProtectionMetrics.js"
import { makeRecipientCheck } from "./QrRecipientCheck.js"
import { QrNotConnected, QrRecipientNotOnWhatsApp, QrSendFailed } from "./QrSendError.js"
import type { QrLink } from "./QrSocket.js"
import { makeTyping } from "./QrTyping.js"

/** A text to send. `messageId` (ours) becomes the WhatsApp message id. */
export interface QrOutboundText {
  readonly messageId: string
  /**
   * E.164, a LID's address (`<lid>@lid`: a contact WhatsApp named by LID alone), or a group chat's
   * (`<id>@g.us`, `GroupChats.groupChatAddress`)
   */
  readonly to: string
  /** the text (a text send, a template's rendering) */
  readonly text: string
  /** a location, a reaction or a file; a text when absent */
  readonly content?: MessageContent.OutgoingBody | undefined
  /** the message this one quotes, by WhatsApp's id */
  readonly quoted?: MessageContent.ProviderMessageRef | null | undefined
  /**
   * Opens a file's bytes (`content` is its media), read as Baileys encrypts and uploads them;
   * opened only when the send goes ahead, closed when it ends
   */
  readonly file?: (() => Readable) | undefined
}

/** The WhatsApp key of a message of the 1:1 chat with `jid`, known by its WhatsApp id. */
const chatKey = (jid: string, ref: MessageContent.ProviderMessageRef) => ({
  remoteJid: jid,
  id: ref.providerMessageId,
  fromMe: ref.fromMe,
  // in a group chat, a participant's message is keyed by its author too
  ...(ref.participant == null || ref.fromMe
    ? {}
    : {
      participant: LidAddress.addressedLid(ref.participant) === undefined ? e164ToJid(ref.participant) : ref.participant
    })
})

/**
 * What Baileys sends for an outbound message: a text, a location, a reaction keyed to the reacted
 * message (an empty emoji removes it), or a file streamed from `file` (Baileys encrypts it and
 * uploads it to WhatsApp's media host): an image or a video with its caption, a document with its
 * filename and caption, an audio file or a voice note (`ptt`, typed `audio/ogg; codecs=opus`), a sticker. A file without its
 * bytes is an `Error` (the provider opens them before it sends).
 */
export const baileysContent = (
  jid: string,
  message: QrOutboundText,
  file: Readable | undefined
): AnyMessageContent | Error => {
  const content = message.content
  switch (content?._tag) {
    case undefined:
    case "text":
      return { text: message.text }
    case "location":
      return {
        location: {
          degreesLatitude: content.latitude,
          degreesLongitude: content.longitude,
          ...(content.name === null ? {} : { name: content.name }),
          ...(content.address === null ? {} : { address: content.address })
        }
      }
    case "reaction":
      return { react: { text: content.emoji, key: chatKey(jid, content.target) } }
    case "media": {
      if (file === undefined) return new Error(`a ${content.kind} send carries no file`)
      const media = { stream: file }
      const mimetype = content.mimeType
      const caption = content.caption === null ? {} : { caption: content.caption }
      switch (content.kind) {
        case "image":
          return { image: media, mimetype, ...caption }
        case "video":
          return { video: media, mimetype, ...caption }
        case "document":
          return {
            document: media,
            mimetype,
            ...(content.filename === null ? {} : { fileName: content.filename }),
            ...caption
          }
        case "audio":
          // WhatsApp plays a voice note only as `audio/ogg; codecs=opus` (docs/API.md "Media")
          return content.voice
            ? { audio: media, mimetype: MediaType.voiceNoteType(mimetype), ptt: true }
            : { audio: media, mimetype, ptt: false }
        case "sticker":
          return { sticker: media, mimetype }
      }
    }
  }
}

/** Baileys' `quoted` option: the quoted message's key and its text (the quote's preview). */
export const baileysQuoted = (jid: string, quoted: MessageContent.ProviderMessageRef): WAMessage => ({
  key: chatKey(jid, quoted),
  message: { conversation: quoted.body }
})

/** The sends of one connection (its recipient checks and typing state are its own). */
export const make = (options: {
  readonly channelId: string
  readonly link: () => QrLink
  readonly publish: (event: QrConnectionEvent) => Effect.Effect<boolean>
  /** WhatsApp said rate-overlimit to a send: the channel's sends pause */
  readonly throttled: Effect.Effect<void>
  readonly queryTimeout: Duration.Duration
  readonly typingIndicator: boolean
}) => {
  const { channelId, publish } = options
  const recipients = makeRecipientCheck()
  const typing = makeTyping(options.typingIndicator)

  /**
   * Sends a message; succeeds once Baileys wrote it to WhatsApp (= `provider_accepted`). The first
   * send to a number checks that it is on WhatsApp (`QrRecipientCheck`).
   */
  const send = (message: QrOutboundText) =>
    Effect.suspend((): Effect.Effect<void, QrNotConnected | QrSendFailed | QrRecipientNotOnWhatsApp> => {
      const { socket: s, status } = options.link()
      if (!s) return Effect.fail(new QrNotConnected({ channelId, status }))
      const failed = (error: unknown) =>
        new QrSendFailed({
          channelId,
          messageId: message.messageId,
          reason: error instanceof Error ? error.message : String(error)
        })
      // a LID is WhatsApp's own address of someone who wrote to us: on WhatsApp, nothing to check
      // a group chat (`<id>@g.us`): WhatsApp's own address of a group the number is in, nothing to check
      const lid = LidAddress.addressedLid(message.to)
      const group = GroupChats.addressedGroupChat(message.to)
      const jid = lid === undefined && group === undefined ? e164ToJid(message.to) : message.to
      const chatState = (state: "composing" | "paused", to: string) => s.sendPresenceUpdate(state, to)
      const check = lid === undefined && group === undefined
        ? QrProtectionMetrics.countCheck(recipients.check(jid, (j) => s.onWhatsApp(j))).pipe(
          // WhatsApp's answer is kept (on the contact, and counted in `qr/safety`)
          Effect.tap(({ asked, exists }) =>
            asked
              ? Effect.flatMap(Clock.currentTimeMillis, (at) =>
                publish({ _tag: "recipient_checked", channelId, phoneNumber: message.to, onWhatsApp: exists, at }))
              : Effect.void
          )
        )
        : Effect.succeed({ exists: true })
      return check.pipe(
        Effect.mapError(failed),
        Effect.filterOrFail(
          ({ exists }) => exists,
          () => new QrRecipientNotOnWhatsApp({ channelId, messageId: message.messageId })
        ),
        // a conversation's first message after a pause: "typing..." first (`QrTyping`)
        Effect.tap(() => typing.before(jid, message, chatState)),
        Effect.zipRight(Effect.tryPromise({
          try: async () => {
            const file = message.file?.()
            try {
              const content = baileysContent(jid, message, file)
              if (content instanceof Error) throw content
              const quoted = message.quoted ? baileysQuoted(jid, message.quoted) : undefined
              return await s.sendMessage(jid, content, { messageId: message.messageId, ...(quoted ? { quoted } : {}) })
            } finally {
              // read to the end on success; on a failure this ends the media-store read
              file?.destroy()
            }
          },
          catch: failed
        })),
        Effect.onExit((exit) => typing.after(jid, Exit.isSuccess(exit), chatState))
      ).pipe(
        Effect.timeoutFail({
          duration: Duration.times(options.queryTimeout, 2),
          onTimeout: () => new QrSendFailed({ channelId, messageId: message.messageId, reason: "timed out" })
        }),
        Effect.tapError((e) => e._tag === "QrSendFailed" && isThrottled(e.reason) ? options.throttled : Effect.void),
        Effect.asVoid
      )
    }).pipe(
      Effect.withSpan("QrConnection.send", { attributes: { channel_id: channelId, message_id: message.messageId } })
    )

  /**
   * Asks the sender's phone to upload an inbound media again (WhatsApp's media host answered
   * 404/410); the message with the media's new location.
   */
  const reupload = (message: WAMessage) =>
    Effect.suspend((): Effect.Effect<WAMessage, MediaDownloadFailed> => {
      const { socket: s, status } = options.link()
      if (!s) {
        return Effect.fail(
          new MediaDownloadFailed({
            retryable: true,
            reason:
              `WhatsApp's media host no longer has this file; the channel is ${status}, so the sender's phone cannot be asked for it now`
          })
        )
      }
      return Effect.tryPromise({
        // the new location is on the host media_conn names, which this socket may not have asked yet
        try: () => s.refreshMediaConn(false).then(() => s.updateMediaMessage(message)),
        catch: () =>
          new MediaDownloadFailed({
            retryable: false,
            reason: "WhatsApp's media host no longer has this file and the sender's phone did not upload it again"
          })
      }).pipe(
        Effect.timeoutFail({
          duration: Duration.times(options.queryTimeout, 2),
          onTimeout: () =>
            new MediaDownloadFailed({
              retryable: true,
              reason: "The sender's phone did not answer the request to upload the file again"
            })
        })
      )
    }).pipe(Effect.withSpan("QrConnection.reupload", { attributes: { channel_id: channelId } }))

  return { send, reupload } as const
}
