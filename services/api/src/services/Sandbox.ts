/** Sandbox sessions on shared test numbers. Test-mode API keys only. */
import { SandboxApi, type Security } from "@switchboard/api"
import { GroupChatsRepo, MediaRepo, MessagesRepo, SandboxRepo, Transactions } from "@switchboard/db"
import { Errors, Ids, MediaSniff, MessageContent, Pagination, SandboxInbound, Schemas } from "@switchboard/domain"
import { ChannelProtocol } from "@switchboard/entities/protocol"
import { ProvidersConfig, SandboxNumbers } from "@switchboard/providers/contract"
import { Clock, Effect, Option, Schedule } from "effect"
import { createHash, randomBytes, randomInt, timingSafeEqual } from "node:crypto"
import { Channels } from "./Channels.js"
import { Entitlements } from "./Entitlements.js"
import { checkVoiceNote, fileRefused, MediaFiles } from "./MediaFiles.js"
import * as SandboxGroupChatRules from "./SandboxGroupChatRules.js"
import { noNumberAvailable, refuseBeyondShare, requireTestKey } from "./SandboxRefusals.js"

const SESSION_TTL_MS = 72 * 3600 * 1000

/** How long `inbound` waits for the channel to record the message it delivered before a 503. */
const RECORDED_WITHIN = "10 seconds"

/** What the sandbox is, said in the allocation answer (docs/API.md "API", limits and lifetimes). */
const SIMULATED =
  "The sandbox is a simulated network: no phone ever receives its messages, and this code is shown to you (no SMS is sent) so that you verify a recipient yourself. To reach real phones, link your own WhatsApp number as a QR channel (docs/QR-CHANNELS.md)."

/**
 * Wrong verification codes a session takes before its verification locks for good (README
 * "Sandbox", OpenAPI): a 6-digit code must not be guessable, whatever the rate limiter allows.
 */
export const MAX_VERIFY_FAILURES = 5

const codeHash = (code: string) => createHash("sha256").update(code).digest("hex")

const toSession = (row: SandboxRepo.SandboxSessionRow) =>
  new SandboxApi.SandboxSession({
    id: row.id,
    object: "sandbox_session",
    channel_id: row.channel_id,
    phone_number: row.phone_number,
    status: row.status,
    verified_recipients: row.verified_recipients,
    expires_at: row.expires_at,
    created_at: row.created_at
  })

/**
 * A session past its expiry reads `expired` even before the sweeper (runner) has recorded it, so
 * it never verifies, receives or sends once its time is up.
 */
const asOf = (row: SandboxRepo.SandboxSessionRow, nowMs: number): SandboxRepo.SandboxSessionRow =>
  row.status === "active" && Date.parse(row.expires_at) <= nowMs ? { ...row, status: "expired" } : row

export class Sandbox extends Effect.Service<Sandbox>()("@switchboard/service-api/Sandbox", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const repo = yield* SandboxRepo.SandboxRepo
    const channelClient = yield* ChannelProtocol.ChannelEntity.client
    const messages = yield* MessagesRepo.MessagesRepo
    const mediaRepo = yield* MediaRepo.MediaRepo
    const files = yield* MediaFiles
    const channels = yield* Channels
    const entitlements = yield* Entitlements
    const config = yield* ProvidersConfig.ProvidersConfig
    const groupChats = yield* GroupChatsRepo.GroupChatsRepo
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

    const load = Effect.fn("Sandbox.load")(function*(principal: Security.Principal, id: string) {
      yield* requireTestKey(principal)
      const found = yield* repo.find(principal.workspaceId, id)
      if (Option.isNone(found)) {
        return yield* new Errors.NotFound({
          message: `No sandbox session ${id}`,
          details: { resource: "sandbox_session", id }
        })
      }
      return asOf(found.value, yield* Clock.currentTimeMillis)
    })

    /** The session as stored now (after a change), with its effective status. */
    const reload = (workspaceId: string, id: string) =>
      Effect.gen(function*() {
        const row = Option.getOrThrow(yield* repo.find(workspaceId, id))
        return toSession(asOf(row, yield* Clock.currentTimeMillis))
      })

    const create = Effect.fn("Sandbox.create")(function*(principal: Security.Principal) {
      yield* requireTestKey(principal)
      const nowMs = yield* Clock.currentTimeMillis
      const at = Schemas.toTimestamp(nowMs)
      const code = String(randomInt(0, 1_000_000)).padStart(6, "0")
      const session = yield* transactions.run(Effect.gen(function*() {
        // serialise allocations so two sessions never take the same number
        yield* repo.lockAllocations()
        // sessions past their expiry end here too (not only in the sweeper): their numbers are
        // free for this allocation, and the unique index never sees a number twice
        yield* repo.expire(at)
        yield* refuseBeyondShare(
          yield* entitlements.get(principal.workspaceId, "shared_test_sessions"),
          yield* repo.countActive(principal.workspaceId, at),
          config.sandboxNumbers.length
        )
        const inUse = yield* repo.numbersInUse()
        const phone = config.sandboxNumbers.find((n) => !inUse.has(n))
        if (phone === undefined) return yield* noNumberAvailable(inUse, config.sandboxNumbers, nowMs)
        const id = yield* Ids.newId("sbx")
        const channelId = yield* channels.insert({
          workspaceId: principal.workspaceId,
          name: `Sandbox ${phone} (${id.slice(-6)})`,
          provider: "sandbox",
          status: "connected",
          phoneNumber: phone,
          withCapabilities: true
        }).pipe(Effect.catchTag("Conflict", Effect.die))
        const row = {
          id,
          workspace_id: principal.workspaceId,
          channel_id: channelId,
          phone_number: phone,
          status: "active" as const,
          code_hash: codeHash(code),
          expires_at: Schemas.toTimestamp(nowMs + SESSION_TTL_MS),
          created_at: at
        }
        yield* repo.insert(row)
        return toSession({ ...row, updated_at: at, verified_recipients: [] })
      }))
      return new SandboxApi.CreatedSandboxSession({
        ...session,
        verification: {
          code,
          instructions:
            `Verify each recipient with POST /v1/sandbox/sessions/${session.id}/verify {"phone_number": "+...", "code": "${code}"}. ` +
            `Messages then go from ${session.phone_number}. This code is shown once. ${SIMULATED}`
        }
      })
    })

    /** The workspace's sessions, newest first, each with the status a reader sees now. */
    const list = Effect.fn("Sandbox.list")(function*(
      principal: Security.Principal,
      query: Pagination.ListQuery & { readonly status?: "active" | "revoked" | "expired" | undefined }
    ) {
      yield* requireTestKey(principal)
      const nowMs = yield* Clock.currentTimeMillis
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      const rows = yield* repo.list({
        workspaceId: principal.workspaceId,
        limit,
        now: Schemas.toTimestamp(nowMs),
        status: query.status,
        after: query.after
      })
      return Pagination.toPage(rows, limit, (row) => toSession(asOf(row, nowMs)))
    })

    const get = Effect.fn("Sandbox.get")(function*(principal: Security.Principal, id: string) {
      return toSession(yield* load(principal, id))
    })

    const verify = Effect.fn("Sandbox.verify")(
      function*(
        principal: Security.Principal,
        id: string,
        input: { readonly phone_number: string; readonly code: string }
      ) {
        const session = yield* load(principal, id)
        if (session.status !== "active") {
          return yield* new Errors.ValidationError({
            message: `The session is ${session.status}`,
            details: { reason: "session_not_active", issues: [{ path: ["code"], message: "Invalid code" }] }
          })
        }
        const at = yield* now
        // one verification of a session at a time (row lock), so concurrent guesses count too;
        // the failure is counted in a committed transaction, then answered
        const outcome = yield* transactions.run(Effect.gen(function*() {
          const failures = yield* repo.verifyFailuresForUpdate(id)
          if (failures >= MAX_VERIFY_FAILURES) return { _tag: "Locked" as const }
          const given = Buffer.from(codeHash(input.code))
          const expected = Buffer.from(session.code_hash)
          if (!timingSafeEqual(given, expected)) {
            const count = yield* repo.recordVerifyFailure(id, at)
            return { _tag: "Wrong" as const, remaining: Math.max(0, MAX_VERIFY_FAILURES - count) }
          }
          yield* repo.addRecipient(id, input.phone_number, at)
          return { _tag: "Verified" as const }
        }))
        if (outcome._tag === "Locked") {
          return yield* new Errors.ValidationError({
            message:
              `Verification of this session is locked after ${MAX_VERIFY_FAILURES} wrong codes; create a new sandbox session`,
            details: { reason: "verification_locked", issues: [{ path: ["code"], message: "Verification is locked" }] }
          })
        }
        if (outcome._tag === "Wrong") {
          return yield* new Errors.ValidationError({
            message: outcome.remaining === 0
              ? `The verification code is wrong; this session's verification is now locked`
              : "The verification code is wrong",
            details: {
              reason: "invalid_code",
              attempts_remaining: outcome.remaining,
              issues: [{ path: ["code"], message: "Invalid code" }]
            }
          })
        }
        return yield* reload(principal.workspaceId, id)
      }
    )

    const revoke = Effect.fn("Sandbox.revoke")(function*(principal: Security.Principal, id: string) {
      const session = yield* load(principal, id)
      if (session.status === "active") {
        yield* repo.revoke(principal.workspaceId, id, yield* now)
        yield* channels.archive(principal.workspaceId, session.channel_id).pipe(Effect.orDie)
      }
      return yield* reload(principal.workspaceId, id)
    })

    /** A message of the session's channel, named by a reaction, edit, revoke or `reply_to`. */
    const messageOfChannel = (principal: Security.Principal, channelId: string, id: string, path: string) =>
      Effect.gen(function*() {
        const found = yield* messages.findById(id)
        if (
          Option.isNone(found) || found.value.workspace_id !== principal.workspaceId ||
          found.value.channel_id !== channelId
        ) {
          return yield* new Errors.ValidationError({
            message: "Name a message of the session's channel",
            details: {
              reason: "message_not_in_session",
              issues: [{ path: path.split("."), message: "Unknown message" }]
            }
          })
        }
        // our id is what the provider knows a message by (`ChannelProvider.send`), and inbound
        // ones are resolved by id as well
        return found.value.id as string
      })

    /**
     * The file of a media kind, inline or stored, through the same check as an upload
     * (`MediaSniff.checkFile`: empty refused, the declared type against the bytes, the type stored
     * in its canonical form) and the kind's limits.
     */
    const fileOf = (
      principal: Security.Principal,
      kind: MessageContent.MediaKind,
      input: {
        readonly media_id?: string | undefined
        readonly data_base64?: string | undefined
        readonly mime_type?: string | undefined
      }
    ) =>
      Effect.gen(function*() {
        if (input.media_id !== undefined) {
          const found = yield* mediaRepo.find(principal.workspaceId, input.media_id)
          if (Option.isNone(found)) return yield* new Errors.NotFound({ message: "No such media" })
          const media = found.value
          if (media.status !== "ready") {
            return yield* new Errors.ValidationError({
              message: `The media is ${media.status}`,
              details: { reason: "media_not_ready", issues: [{ path: [kind, "media_id"], message: "Not stored" }] }
            })
          }
          const path = [kind, "media_id"]
          const mimeType = yield* files.checkStored(media, kind, { type: path, bytes: path })
          return {
            mimeType,
            sizeBytes: media.size_bytes,
            sha256: media.sha256,
            filename: media.filename,
            source: { media_id: media.id }
          }
        }
        const data = input.data_base64 ?? ""
        if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0) {
          return yield* new Errors.ValidationError({
            message: "data_base64 is not base64",
            details: { issues: [{ path: [kind, "data_base64"], message: "Expected base64" }] }
          })
        }
        const bytes = Buffer.from(data, "base64")
        const limit = Math.min(SandboxInbound.SANDBOX_INLINE_MEDIA_BYTES, MessageContent.MEDIA_LIMIT_BYTES[kind])
        if (bytes.byteLength > limit) {
          return yield* new Errors.PayloadTooLarge({
            message: `The ${kind} is larger than ${limit} bytes`,
            details: { limit_bytes: limit }
          })
        }
        const verdict = MediaSniff.checkFile({
          kind,
          declared: input.mime_type,
          head: bytes.subarray(0, MediaSniff.SNIFF_BYTES)
        })
        if (verdict._tag === "refused") {
          return yield* fileRefused(verdict.refusal, { type: [kind, "mime_type"], bytes: [kind, "data_base64"] })
        }
        return {
          mimeType: verdict.file.mimeType,
          sizeBytes: bytes.byteLength,
          sha256: createHash("sha256").update(bytes).digest("hex"),
          filename: null,
          source: { data_base64: data }
        }
      })

    const as = (body: MessageContent.InboundBody) => body

    /** The request as the provider-neutral body the network delivers. */
    const bodyOf = (principal: Security.Principal, channelId: string, input: SandboxInbound.SandboxInboundRequest) =>
      Effect.gen(function*() {
        if (input.text) return as({ _tag: "text", body: input.text.body })
        for (const kind of MessageContent.MEDIA_KINDS) {
          const given = input[kind]
          if (given === undefined) continue
          const file = yield* fileOf(principal, kind, given)
          const voice = kind === "audio" && input.audio?.voice === true
          if (voice) yield* checkVoiceNote(file.mimeType)
          return as({
            _tag: "media",
            kind,
            mimeType: file.mimeType,
            caption: "caption" in given ? (given.caption ?? null) : null,
            filename: kind === "document"
              ? (input.document?.filename ?? file.filename)
              : null,
            voice,
            sizeBytes: file.sizeBytes,
            sha256: file.sha256,
            source: file.source
          })
        }
        if (input.location) {
          const l = input.location
          return as({
            _tag: "location",
            latitude: l.latitude,
            longitude: l.longitude,
            name: l.name ?? null,
            address: l.address ?? null
          })
        }
        if (input.contacts) return as({ _tag: "contacts", contacts: input.contacts })
        if (input.reaction) {
          const target = yield* messageOfChannel(principal, channelId, input.reaction.message_id, "reaction.message_id")
          return as({ _tag: "reaction", targetProviderMessageId: target, emoji: input.reaction.emoji })
        }
        if (input.edit) {
          const target = yield* messageOfChannel(principal, channelId, input.edit.message_id, "edit.message_id")
          return as({ _tag: "edit", targetProviderMessageId: target, body: input.edit.text.body })
        }
        if (input.revoke) {
          const target = yield* messageOfChannel(principal, channelId, input.revoke.message_id, "revoke.message_id")
          return as({ _tag: "revoke", targetProviderMessageId: target })
        }
        return as({ _tag: "unsupported", kind: input.unsupported?.kind ?? "unknown" })
      })

    /**
     * The message the channel recorded under `providerMessageId`, and its conversation: the
     * channel's entity records what the network delivered within milliseconds (on a runner, maybe
     * another process), so it is looked up until there, for at most `RECORDED_WITHIN`; then 503,
     * saying the message went out (a retry would deliver it twice).
     */
    const recorded = (channelId: string, providerMessageId: string) =>
      messages.idForProviderMessage(channelId, providerMessageId).pipe(
        Effect.flatMap((id) => id === null ? Effect.succeed(Option.none()) : messages.findById(id)),
        // the message went out already: a passing database failure while it is looked up is
        // waited out like a message not recorded yet, never answered as if nothing was delivered
        Effect.catchTag("DatabaseUnavailable", () => Effect.succeed(Option.none())),
        // not there yet: `NoSuchElementException` (an empty Option as an effect), looked up again
        Effect.flatMap((found) => found),
        Effect.retry(Schedule.spaced("25 millis").pipe(Schedule.upTo(RECORDED_WITHIN))),
        Effect.catchTag("NoSuchElementException", () =>
          new Errors.ServiceUnavailable({
            message:
              "The message was delivered but is not recorded yet; find it with GET /v1/messages?direction=inbound in a moment rather than sending it again"
          })),
        Effect.map((message) =>
          new SandboxApi.SandboxInboundAccepted({
            object: "sandbox_inbound",
            message_id: message.id,
            conversation_id: message.conversation_id
          })
        )
      )

    /** An active session of the workspace (422 `session_not_active` otherwise). */
    const active = (principal: Security.Principal, id: string) =>
      Effect.gen(function*() {
        const session = yield* load(principal, id)
        if (session.status !== "active") {
          return yield* new Errors.ValidationError({
            message: `The session is ${session.status}`,
            details: { reason: "session_not_active" }
          })
        }
        return session
      })

    /** A number the session's simulated network knows: verified, or a magic number. */
    const knownTo = (session: SandboxRepo.SandboxSessionRow, phone: string) =>
      SandboxNumbers.isMagicNumber(phone) || session.verified_recipients.includes(phone)

    /** A simulated group chat of the session's channel, with its participants (404 otherwise). */
    const groupChatOf = (principal: Security.Principal, session: SandboxRepo.SandboxSessionRow, id: string) =>
      Effect.gen(function*() {
        const found = yield* groupChats.find(principal.workspaceId, id)
        if (Option.isNone(found) || found.value.channel_id !== session.channel_id) {
          return yield* new Errors.NotFound({
            message: `No group chat ${id} on this session's channel`,
            details: { resource: "group_chat", id }
          })
        }
        return found.value
      })

    /** The group chat a simulated message is written in: `from` and what it mentions are participants. */
    const groupOfInbound = (
      principal: Security.Principal,
      session: SandboxRepo.SandboxSessionRow,
      input: SandboxInbound.SandboxInboundRequest,
      groupChatId: string
    ) =>
      Effect.gen(function*() {
        const chat = yield* groupChatOf(principal, session, groupChatId)
        return yield* SandboxGroupChatRules.checkInboundWriter(chat, input)
      })

    /** The simulated network delivers a message of any kind from a verified recipient. */
    const inbound = Effect.fn("Sandbox.inbound")(
      function*(principal: Security.Principal, id: string, input: SandboxInbound.SandboxInboundRequest) {
        const session = yield* active(principal, id)
        if (!SandboxNumbers.isMagicNumber(input.from) && !session.verified_recipients.includes(input.from)) {
          return yield* new Errors.ValidationError({
            message: "Only verified recipients can write to a sandbox number",
            details: {
              reason: "recipient_not_verified",
              issues: [{ path: ["from"], message: "Verify this number first" }]
            }
          })
        }
        const group = input.group_chat_id === undefined
          ? undefined
          : yield* groupOfInbound(principal, session, input, input.group_chat_id)
        const body = yield* bodyOf(principal, session.channel_id, input)
        const quoted = input.reply_to === undefined
          ? null
          : yield* messageOfChannel(principal, session.channel_id, input.reply_to, "reply_to")
        // the simulated network delivers it to the channel's entity, which records it like any
        // provider's inbound message (contact, conversation, `message.received`), under the id
        // given here, by which the answer finds it
        const providerMessageId = `sbx-in-${randomBytes(12).toString("hex")}`
        const delivered = yield* channelClient(session.channel_id).SimulateInbound({
          from: input.from,
          body,
          quoted_provider_message_id: quoted,
          provider_message_id: providerMessageId,
          ...(group === undefined ? {} : { group_chat: group, mentions: input.mentions ?? [] })
        }).pipe(
          Effect.catchAllDefect(Effect.fail),
          Effect.retry({ times: 2, schedule: Schedule.spaced("200 millis") }),
          Effect.catchAllCause(() =>
            new Errors.ServiceUnavailable({ message: "The sandbox network is unreachable; retry later" })
          )
        )
        if (!delivered) {
          return yield* new Errors.ValidationError({
            message: "The session's channel is not connected",
            details: { reason: "session_not_active" }
          })
        }
        return yield* recorded(session.channel_id, providerMessageId)
      }
    )

    return {
      create,
      list,
      get,
      verify,
      revoke,
      inbound,
      /** what the simulated group chats (`SandboxGroupChats`) check a session by */
      active,
      knownTo,
      groupChatOf
    } as const
  }),
  dependencies: [
    SandboxRepo.SandboxRepo.Default,
    Transactions.Transactions.Default,
    Channels.Default,
    Entitlements.Default,
    MessagesRepo.MessagesRepo.Default,
    MediaRepo.MediaRepo.Default,
    MediaFiles.Default,
    GroupChatsRepo.GroupChatsRepo.Default
  ]
}) {}
