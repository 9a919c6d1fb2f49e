/**
 * What a send carries besides text and templates (docs/API.md "Messages", "Media"): the file of a media
 * kind (a stored media of the workspace, checked against the kind's types and limit, or a URL
 * fetched once through the egress policy into a new media), a location, a reaction to a message
 * of the same conversation, and the quoted message of `reply_to`. Resolved before anything is
 * written, so a refused send leaves nothing behind; a URL's file, stored when it is fetched, is
 * removed when the send is refused after all (`discard`).
 */
import { MediaRepo, MessagesRepo } from "@switchboard/db"
import { Errors, LidAddress, type Media, MessageContent, Messaging, UnknownIds } from "@switchboard/domain"
import { Effect, Option, type Schema } from "effect"
import { MediaFetch } from "./MediaFetch.js"
import { checkVoiceNote, MediaFiles } from "./MediaFiles.js"

type SendFields = Schema.Struct.Type<typeof Messaging.sendFields>

/** The resolved content: the message's type, `text.body`, its member, its media and its quote. */
export interface SendContent {
  readonly type: Messaging.SendKind
  /** a file's caption ("" when none); text and templates keep their own */
  readonly body: string | undefined
  readonly member: Messaging.MessageMemberValue | undefined
  readonly media: Messaging.Message["media"]
  readonly replyTo: Messaging.Message["context"]["reply_to"]
  /** the file was fetched from a URL for this send alone: a refusal after `resolve` must `discard` it */
  readonly fetched: boolean
}

const invalid = (path: ReadonlyArray<string>, message: string, reason: string, extra: Record<string, unknown> = {}) =>
  new Errors.ValidationError({ message, details: { reason, ...extra, issues: [{ path: [...path], message }] } })

/** A media id that names nothing in this workspace: its 404, like any unknown id (docs/API.md "Errors"). */
const mediaNotFound = (path: ReadonlyArray<string>) =>
  new Errors.NotFound({
    message: "No media with this id in this workspace",
    details: {
      resource: UnknownIds.RESOURCE_OF_PREFIX.med,
      issues: [{ path: [...path], message: "Names nothing here" }]
    }
  })

/**
 * Whether `to` is the other side of a message (the conversation it belongs to, with its channel):
 * its number, or for a sender WhatsApp named by LID alone, that LID's address; for a send to a
 * group chat (`groupChatId`), a message of that group chat. A group chat's messages are never of
 * a 1:1 conversation.
 */
const isCounterpart = (m: Messaging.Message, to: string, groupChatId: string | undefined) =>
  groupChatId !== undefined
    ? m.group_chat_id === groupChatId
    : m.group_chat_id === undefined && (m.direction === "outbound"
      ? m.to === to
      : m.from === to || (m.sender?.whatsapp_lid != null && LidAddress.lidAddress(m.sender.whatsapp_lid) === to))

export class SendContents extends Effect.Service<SendContents>()("@switchboard/service-api/SendContents", {
  effect: Effect.gen(function*() {
    const mediaRepo = yield* MediaRepo.MediaRepo
    const messages = yield* MessagesRepo.MessagesRepo
    const fetcher = yield* MediaFetch
    const files = yield* MediaFiles

    /** A message of the conversation (`channelId`, `to`) the send goes to; 422 otherwise. */
    const messageOfConversation = (
      workspaceId: string,
      id: string,
      channelId: string,
      to: string,
      groupChatId: string | undefined,
      path: ReadonlyArray<string>
    ) =>
      Effect.gen(function*() {
        const found = yield* messages.find(workspaceId, id)
        if (
          Option.isNone(found) || found.value.channel_id !== channelId || !isCounterpart(found.value, to, groupChatId)
        ) {
          return yield* invalid(path, "Not a message of this conversation", "message_not_in_conversation")
        }
        return found.value
      })

    /** A stored media the kind can send: ready, of a type the kind takes, within its limit. */
    const fileFor = (kind: MessageContent.MediaKind, row: Media.Media) =>
      Effect.gen(function*() {
        const path = [kind, "media_id"]
        if (row.status !== "ready" || row.size_bytes === null || row.sha256 === null) {
          return yield* invalid(path, `The media is ${row.status}`, "media_not_ready")
        }
        if (row.size_bytes > MessageContent.MEDIA_LIMIT_BYTES[kind]) {
          return yield* invalid(
            path,
            `A ${kind} is at most ${MessageContent.MEDIA_LIMIT_BYTES[kind]} bytes`,
            "media_too_large",
            {
              limit_bytes: MessageContent.MEDIA_LIMIT_BYTES[kind]
            }
          )
        }
        // the bytes, not only the stored type: a file uploaded as a document is sent as an image
        // only if it is one
        const read = yield* files.checkStored(row, kind, { type: path, bytes: path })
        // the type as its bytes show it (an Ogg file's codec read from them), for the voice check
        return { ...row, read }
      })

    const resolve = Effect.fn("SendContents.resolve")(function*(
      workspaceId: string,
      channelId: string,
      to: string,
      body: SendFields,
      /** a send to a group chat: the messages it quotes or reacts to are of that group chat */
      groupChatId?: string
    ) {
      const type = Messaging.sendKind(body)
      const replyTo = body.reply_to === undefined
        ? null
        : (yield* messageOfConversation(workspaceId, body.reply_to, channelId, to, groupChatId, ["reply_to"])).id
      const plain = {
        type,
        body: undefined,
        member: undefined,
        media: null,
        replyTo,
        fetched: false
      } satisfies SendContent
      switch (type) {
        case "text":
        case "template":
          return plain
        case "location": {
          const l = body.location!
          return {
            ...plain,
            body: "",
            member: { latitude: l.latitude, longitude: l.longitude, name: l.name ?? null, address: l.address ?? null }
          }
        }
        case "reaction": {
          const r = body.reaction!
          const target = yield* messageOfConversation(workspaceId, r.message_id, channelId, to, groupChatId, [
            "reaction",
            "message_id"
          ])
          return { ...plain, body: "", member: { message_id: target.id, emoji: r.emoji } }
        }
        default: {
          const kind = type
          const given = body[kind]!
          const row = given.media_id !== undefined
            ? yield* Effect.flatMap(mediaRepo.find(workspaceId, given.media_id), (found) =>
              Option.match(found, {
                onNone: () => Effect.fail(mediaNotFound([kind, "media_id"])),
                onSome: Effect.succeed
              }))
            : yield* fetcher.fetch(workspaceId, kind, given.url!)
          const fetched = given.media_id === undefined
          // a file fetched for this send alone is not kept when it is refused (its type is known
          // only once fetched)
          const file = yield* Effect.gen(function*() {
            const file = yield* fileFor(kind, row)
            if (kind === "audio" && body.audio?.voice === true) yield* checkVoiceNote(file.read)
            return file
          }).pipe(Effect.onError(() => fetched ? files.discardUnsent(row.id) : Effect.void))
          const caption = "caption" in given && typeof given.caption === "string" ? given.caption : null
          const common = {
            media_id: file.id,
            mime_type: file.mime_type,
            size_bytes: file.size_bytes,
            sha256: file.sha256,
            caption
          }
          const member: Messaging.MessageMemberValue = kind === "document"
            ? { ...common, filename: body.document?.filename ?? file.filename }
            : kind === "audio"
            ? { ...common, caption: null, voice: body.audio?.voice ?? false }
            : kind === "sticker"
            ? { ...common, caption: null }
            : common
          return {
            ...plain,
            body: caption ?? "",
            member,
            media: { id: file.id, status: "ready" as const, failure_reason: null },
            fetched
          }
        }
      }
    })

    /**
     * Undoes what `resolve` stored: the file a URL's fetch stored for a send refused after it
     * (the plan's contacts limit, the QR safety cap, the monthly quota, a lost claim, an
     * interrupted request). Nothing for any other content.
     */
    const discard = (content: SendContent) =>
      content.fetched && content.media !== null ? files.discardUnsent(content.media.id) : Effect.void

    return { resolve, discard } as const
  }),
  dependencies: [
    MediaRepo.MediaRepo.Default,
    MessagesRepo.MessagesRepo.Default,
    MediaFetch.Default,
    MediaFiles.Default
  ]
}) {}
