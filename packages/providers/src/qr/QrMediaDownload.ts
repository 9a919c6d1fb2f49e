/**
 * Fetching the bytes of an inbound QR media from WhatsApp's media host (docs/QR-CHANNELS.md "What a QR
 * channel records", "Files"): from the `BaileysMediaSource` stored with the durable download
 * job, streamed and decrypted by Baileys (`downloadContentFromMessage`), never held whole in memory.
 *
 * WhatsApp's media host keeps a file for a while; after that it answers 404 or 410 and only the
 * sender's phone can upload it again. Then the channel's live socket asks for that (Baileys'
 * `updateMediaMessage`, the media retry request) and the download starts again from the new path,
 * once. Without a live socket on this runner the failure is retryable (the job tries again later).
 */
import {
  downloadContentFromMessage,
  getContentType,
  type MediaType,
  normalizeMessageContent,
  proto,
  type WAMessage
} from "baileys"
import { Effect, Option, Schema, Stream } from "effect"
import type { Readable } from "node:stream"
import { MediaDownloadFailed } from "../ChannelProvider.js"

const Source = Schema.Struct({
  key: Schema.Struct({
    id: Schema.String,
    remoteJid: Schema.String,
    fromMe: Schema.Boolean,
    participant: Schema.NullOr(Schema.String)
  }),
  message: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
const decodeSource = Schema.decodeUnknownOption(Source)

/** Asks the sender's phone to upload the media again; the message with its new location. */
export type Reupload = (message: WAMessage) => Effect.Effect<WAMessage, MediaDownloadFailed>

const MEDIA_MEMBERS = [
  "imageMessage",
  "videoMessage",
  "audioMessage",
  "documentMessage",
  "stickerMessage",
  "ptvMessage"
]

/** The HTTP status the media host answered, when that is why Baileys failed. */
const hostStatus = (error: unknown): number | undefined => {
  const e = error as { output?: { statusCode?: unknown }; status?: unknown } | null | undefined
  const code = e?.output?.statusCode ?? e?.status
  return typeof code === "number" ? code : undefined
}

const GONE = new Set([404, 410])

/** A failure in our own words: Baileys' messages carry the media URL with its access tokens. */
const failed = (error: unknown): MediaDownloadFailed => {
  const status = hostStatus(error)
  if (status !== undefined && GONE.has(status)) {
    return new MediaDownloadFailed({
      retryable: false,
      reason:
        `WhatsApp's media host no longer has this file (HTTP ${status}) and the sender's phone did not upload it again`
    })
  }
  if (status !== undefined && status >= 400 && status < 500) {
    return new MediaDownloadFailed({
      retryable: false,
      reason: `WhatsApp's media host refused the download (HTTP ${status})`
    })
  }
  return new MediaDownloadFailed({
    retryable: true,
    reason: status === undefined
      ? "The download from WhatsApp's media host failed (network or decryption)"
      : `WhatsApp's media host failed (HTTP ${status})`
  })
}

/** The message a stored source describes, or why it cannot be downloaded. */
export const messageOf = (source: unknown): Option.Option<{ readonly message: WAMessage; readonly member: string }> =>
  Option.flatMap(decodeSource(source), (s) => {
    const content = normalizeMessageContent(proto.Message.fromObject(s.message))
    const member = content ? getContentType(content) : undefined
    if (!content || member === undefined || !MEDIA_MEMBERS.includes(member)) return Option.none()
    return Option.some({
      member,
      message: {
        key: {
          id: s.key.id,
          remoteJid: s.key.remoteJid,
          fromMe: s.key.fromMe,
          ...(s.key.participant === null ? {} : { participant: s.key.participant })
        },
        message: content
      }
    })
  })

const open = (message: WAMessage, member: string) =>
  Effect.tryPromise({
    try: (): Promise<Readable> => {
      const media = (message.message as Record<string, proto.Message.IImageMessage>)[member]!
      return downloadContentFromMessage(
        { mediaKey: media.mediaKey ?? null, directPath: media.directPath ?? null, url: media.url ?? null },
        member.replace("Message", "") as MediaType
      )
    },
    catch: (error) => error
  })

/**
 * The bytes of the media `source` names. `reupload`: the channel's live socket, when it is on this
 * runner.
 */
export const download = (
  source: unknown,
  reupload: Option.Option<Reupload>
): Stream.Stream<Uint8Array, MediaDownloadFailed> =>
  Stream.unwrap(Effect.gen(function*() {
    const found = messageOf(source)
    if (Option.isNone(found)) {
      return yield* new MediaDownloadFailed({ retryable: false, reason: "The stored media handle is not usable" })
    }
    const { member, message } = found.value
    const readable = yield* open(message, member).pipe(
      Effect.catchAll((error) => {
        const status = hostStatus(error)
        if (status === undefined || !GONE.has(status)) return Effect.fail(failed(error))
        if (Option.isNone(reupload)) {
          return Effect.fail(
            new MediaDownloadFailed({
              retryable: true,
              reason:
                `WhatsApp's media host no longer has this file (HTTP ${status}); asking the sender's phone for it needs the channel's link`
            })
          )
        }
        return Effect.flatMap(
          reupload.value(message),
          (again) => Effect.mapError(open(again, member), failed)
        )
      })
    )
    return Stream.fromAsyncIterable<Uint8Array, MediaDownloadFailed>(readable, failed)
  }))
