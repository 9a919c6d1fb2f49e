/**
 * One Baileys socket per QR channel, as a scoped resource.
 *
 * A single actor fiber owns the socket and handles, one at a time, the owner's commands (`start`,
 * `resume`, `logout`) and everything the socket reports. Each socket gets a generation number;
 * anything a replaced socket still reports is ignored, so at most one socket is live and no stale
 * close can trigger a reconnect. Close codes:
 *
 * | close | what happens |
 * |---|---|
 * | 515 restart required | reconnect at once with the same creds (after pairing) |
 * | 401 logged out | terminal: auth state sealed and wiped; from the phone -> `requiresRepair` |
 * | 440 replaced | terminal (another socket owns the link); no reconnect, creds kept |
 * | 403, 411 forbidden; 405 outdated client | terminal |
 * | 408 before pairing, codes shown | every QR code expired: `expired`, then `disconnected`; wait for `start` |
 * | 408 after pairing (or before any code), 428, 500, 503, others | reconnect with exponential backoff and jitter; after the budget, `disconnected` |
 * | closed before the WebSocket opened (DNS, refused, timeout, TLS, HTTP error) | a connection error: reported (`connection_error`), then as the row above, but after `qr/start` and until a link first opens only `connectMaxFailures` attempts in a row |
 *
 * The budget counts reconnects (515 included) since the last `open`, so nothing loops. A close
 * before the WebSocket opened never reached WhatsApp, so its Baileys code (408 for a DNS failure,
 * an HTTP status from a proxy) says nothing about the link: it is classified (`QrConnectFailure`)
 * instead, and someone waiting on `qr/start` learns in seconds why, not after the whole budget.
 * Status changes follow the domain's `transitionChannel` (ChannelStateMachine).
 *
 * Over 350 lines on purpose: it is one actor, and its handlers share the actor's state (the live
 * socket and its generation, the reconnect budget, the receipts and sends under way); split across
 * modules, that state would have to be passed around or exposed.
 */
import { ChannelStateMachine, LidAddress, type MessageContent, Messaging } from "@switchboard/domain"
import makeWASocket, {
  type AnyMessageContent,
  type BinaryNode,
  DisconnectReason,
  jidDecode,
  proto,
  type WAMessage,
  type WASocket
} from "baileys"
import {
  Clock,
  Deferred,
  Duration,
  Effect,
  Exit,
  Fiber,
  Option,
  PubSub,
  Queue,
  Random,
  Redacted,
  Runtime,
  Schema,
  type Scope,
  Stream
} from "effect"
import type { Readable } from "node:stream"
import { type InboundRef, isThrottled, MediaDownloadFailed } from "../ChannelProvider.js"
import * as InboundMetrics from "../InboundMetrics.js"
import { fromBaileys, type IgnoredReason, senderOf } from "./BaileysInbound.js"
import { makeBaileysLogger } from "./BaileysLogger.js"
import * as QrAuthState from "./QrAuthState.js"
import { QrAuthStateRepo } from "./QrAuthStateRepo.js"
import { classifyConnectFailure, type QrConnectFailure } from "./QrConnectFailure.js"
import { QrConnectionConfig } from "./QrConnectionConfig.js"
import type { QrConnectionError, QrConnectionEvent, QrReceiptEvent, QrStateEvent } from "./QrConnectionEvent.js"
import * as QrMetrics from "./QrMetrics.js"
import * as QrProtectionMetrics from "./QrProtectionMetrics.js"
import { makeRecipientCheck } from "./QrRecipientCheck.js"
import { cappingSignal, classifyAckError, timelockSignal } from "./QrRestrictions.js"
import { QrNotConnected, QrRecipientNotOnWhatsApp, QrSendFailed } from "./QrSendError.js"
import { makeTyping } from "./QrTyping.js"

/** What a QR channel can do (0.5 messages per second). */
export const qrCapabilities = {
  provider: "qr",
  max_throughput_mps: 0.5,
  message_types: Messaging.MESSAGE_TYPES.qr
} as const

/** The current QR code, if one is showing. */
export interface QrCodeSnapshot {
  readonly code: Redacted.Redacted<string>
  readonly expiresAt: number
  readonly sequence: number
}

/** Everything a `snapshot` frame needs. */
export interface QrSnapshot {
  readonly channelId: string
  readonly status: ChannelStateMachine.ChannelStatus
  readonly phoneNumber: string | null
  readonly qr: QrCodeSnapshot | null
  /** why the last attempt could not reach WhatsApp, until it is reached again or pairing restarts */
  readonly connectionError: QrConnectionError | null
}

/** A text to send. `messageId` (ours) becomes the WhatsApp message id. */
export interface QrOutboundText {
  readonly messageId: string
  /** E.164, or a LID's address (`<lid>@lid`: a contact WhatsApp named by LID alone) */
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
  fromMe: ref.fromMe
})

/**
 * What Baileys sends for an outbound message: a text, a location, a reaction keyed to the reacted
 * message (an empty emoji removes it), or a file streamed from `file` (Baileys encrypts it and
 * uploads it to WhatsApp's media host): an image or a video with its caption, a document with its
 * filename and caption, an audio file or a voice note (`ptt`), a sticker. A file without its
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
          return { audio: media, mimetype, ptt: content.voice }
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

export interface QrConnection {
  readonly channelId: string
  readonly capabilities: typeof qrCapabilities
  /** Status, phone number and the QR code showing now. */
  readonly snapshot: Effect.Effect<QrSnapshot>
  /** Events from the moment of subscription, until the scope closes. Subscribe before `start`. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<QrConnectionEvent>, never, Scope.Scope>
  /** The same as a stream (subscribes when run). */
  readonly events: Stream.Stream<QrConnectionEvent>
  /**
   * `qr/start`: (re)starts from scratch. Ends any socket, resets the reconnect budget, then logs in
   * with the stored link if there is one, else begins a pairing session (QR codes).
   */
  readonly start: Effect.Effect<void>
  /**
   * Runner (re)activation: connects with the stored link if there is one and no socket runs.
   * Never starts a pairing. Returns whether a stored link was found.
   */
  readonly resume: Effect.Effect<boolean>
  /**
   * Sends a text; succeeds once Baileys wrote it to WhatsApp (= `provider_accepted`). The first
   * send to a number checks that it is on WhatsApp (`QrRecipientCheck`).
   */
  readonly send: (
    message: QrOutboundText
  ) => Effect.Effect<void, QrNotConnected | QrSendFailed | QrRecipientNotOnWhatsApp>
  /** `qr/logout`: unlinks the device at WhatsApp (when connected) and wipes the stored link. */
  readonly logout: Effect.Effect<void>
  /**
   * Read receipts (blue ticks) for inbound messages, each to its sender's chat (`readerJid`);
   * succeeds once Baileys wrote them to WhatsApp.
   */
  readonly markRead: (messages: ReadonlyArray<InboundRef>) => Effect.Effect<void, QrNotConnected | QrSendFailed>
  /**
   * Asks the sender's phone to upload an inbound media again (WhatsApp's media host answered
   * 404/410); the message with the media's new location.
   */
  readonly reupload: (message: WAMessage) => Effect.Effect<WAMessage, MediaDownloadFailed>
}

type Command =
  | { readonly _tag: "Start"; readonly done: Effect.Effect<void> }
  | { readonly _tag: "Resume"; readonly done: (found: boolean) => Effect.Effect<void> }
  | { readonly _tag: "Logout"; readonly done: Effect.Effect<void> }
  | { readonly _tag: "SocketQr"; readonly generation: number; readonly code: string }
  | { readonly _tag: "SocketOpen"; readonly generation: number }
  | {
    readonly _tag: "SocketClosed"
    readonly generation: number
    readonly code: number | undefined
    /** set when the socket closed before its WebSocket opened (WhatsApp was never reached) */
    readonly failure: QrConnectFailure | undefined
  }
  | { readonly _tag: "SocketReceipts"; readonly generation: number; readonly items: ReadonlyArray<RawReceipt> }
  | { readonly _tag: "SocketRejected"; readonly generation: number; readonly id: string; readonly error: string }
  | { readonly _tag: "SendThrottled" }
  | {
    readonly _tag: "SocketRestriction"
    readonly generation: number
    readonly timelock?: unknown
    readonly capping?: unknown
  }
  | {
    readonly _tag: "SocketUpsert"
    readonly generation: number
    readonly messages: ReadonlyArray<WAMessage>
  }
  | { readonly _tag: "SocketLidMapping"; readonly generation: number; readonly lid: string; readonly pn: string }
  | { readonly _tag: "ReconnectDue"; readonly generation: number }

interface RawReceipt {
  readonly id: string
  readonly status: number
}

const MessageUpdate = Schema.Struct({
  key: Schema.Struct({ id: Schema.String, fromMe: Schema.optional(Schema.NullOr(Schema.Boolean)) }),
  update: Schema.Struct({ status: Schema.optional(Schema.NullOr(Schema.Number)) })
})
const decodeUpdate = Schema.decodeUnknownOption(MessageUpdate)

const Status = proto.WebMessageInfo.Status
const receiptStatus = (status: number): QrReceiptEvent["status"] | undefined =>
  status === Status.SERVER_ACK
    ? "sent"
    : status === Status.DELIVERY_ACK
    ? "delivered"
    : status === Status.READ || status === Status.PLAYED
    ? "read"
    : undefined

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

const closeCodeOf = (error: unknown): number | undefined => {
  const code = (error as { output?: { statusCode?: unknown } } | undefined)?.output?.statusCode
  return typeof code === "number" ? code : undefined
}

const TERMINAL: ReadonlyMap<number, "connection_replaced" | "forbidden" | "client_outdated"> = new Map([
  [DisconnectReason.connectionReplaced, "connection_replaced"],
  [DisconnectReason.forbidden, "forbidden"],
  [DisconnectReason.multideviceMismatch, "forbidden"],
  [405, "client_outdated"]
])

const { FULL, RECENT } = proto.HistorySync.HistorySyncType

/** What is ignored on purpose every day (logged at debug level; counted like the rest). */
const ROUTINE_IGNORED: ReadonlySet<IgnoredReason> = new Set(["group", "status_broadcast", "broadcast", "newsletter"])

/** Builds the connection; nothing connects until `start` or `resume`. The socket ends with the scope (the link is kept). */
export const make = Effect.fn("QrConnection.make")(function*(options: {
  readonly channelId: string
  /** the channel's stored status; `state` events report transitions from it (default `pending`) */
  readonly initialStatus?: ChannelStateMachine.ChannelStatus
}) {
  const config = yield* QrConnectionConfig
  const repo = yield* QrAuthStateRepo
  const runtime = yield* Effect.runtime<never>()
  const scope = yield* Effect.scope
  const channelId = options.channelId
  const annotations = { channel_id: channelId }

  const events = yield* Effect.acquireRelease(PubSub.unbounded<QrConnectionEvent>(), PubSub.shutdown)
  const commands = yield* Effect.acquireRelease(Queue.unbounded<Command>(), Queue.shutdown)

  // actor state: only the actor fiber writes it
  let status: ChannelStateMachine.ChannelStatus = options.initialStatus ?? "pending"
  let generation = 0
  let socket: WASocket | undefined
  let open = false
  let auth: QrAuthState.QrAuthState | undefined
  let attempts = 0
  let qr: QrCodeSnapshot | null = null
  let qrSequence = 0
  let phoneNumber: string | null = null
  let reconnect: Fiber.RuntimeFiber<void> | undefined
  /** attempts in a row that could not reach WhatsApp, and why the last one failed */
  let connectFailures = 0
  let connectionError: QrConnectionError | null = null
  /** someone asked (`qr/start`) and no link opened since: connection failures give up early */
  let interactive = false
  /** whether this connection counts in the status gauge (`QrMetrics`): from set-up to its end */
  let counted = false
  /** QR strings issued by this connection: scrubbed from Baileys' log lines */
  const issuedCodes: Array<string> = []
  /** receipts already reported (both Baileys events can carry the same one) */
  const reported = new Set<string>()

  const publish = (event: QrConnectionEvent) => PubSub.publish(events, event)

  const move = (
    event: ChannelStateMachine.ChannelInput,
    closeCode: number | null = null,
    causedBy: QrConnectionError | null = null
  ) =>
    Effect.gen(function*() {
      const t = ChannelStateMachine.transitionChannel(status, event)
      if (t._tag !== "Moved") return
      status = t.to
      if (counted) yield* QrMetrics.moved(t.from, t.to)
      yield* Effect.logInfo("qr channel status changed").pipe(Effect.annotateLogs({
        ...annotations,
        from_status: t.from,
        to_status: t.to,
        reason: t.reason,
        ...(closeCode === null ? {} : { close_code: closeCode })
      }))
      yield* publish(
        {
          _tag: "state",
          channelId,
          from: t.from,
          to: t.to,
          reason: t.reason,
          closeCode,
          requiresRepair: t.requiresRepair,
          phoneNumber,
          connectionError: causedBy
        } satisfies QrStateEvent
      )
    })

  const cancelReconnect = Effect.suspend(() => {
    const fiber = reconnect
    reconnect = undefined
    return fiber ? Fiber.interrupt(fiber) : Effect.void
  })

  /** `end(undefined)`: closes and keeps the link (never waits long on a broken socket). */
  const endSocket = (s: WASocket) =>
    Effect.promise(() => s.end(undefined).catch(() => undefined)).pipe(Effect.timeout("5 seconds"), Effect.ignore)

  /** Ends the socket, if any; whatever it still reports is stale from here on. */
  const closeSocket = Effect.gen(function*() {
    yield* cancelReconnect
    generation++
    const s = socket
    socket = undefined
    open = false
    if (s) yield* endSocket(s)
  })

  const openSocket = Effect.gen(function*() {
    yield* closeSocket
    const a = auth
    if (!a) return yield* Effect.dieMessage("QrConnection: no auth state loaded")
    const gen = ++generation
    const offer = (command: Command) => {
      Queue.unsafeOffer(commands, command)
    }
    const logger = makeBaileysLogger({
      level: config.baileysLogLevel,
      runtime,
      annotations,
      secrets: () => [...issuedCodes, a.state.creds.advSecretKey]
    })
    const qrTimeout = Option.getOrUndefined(Option.map(config.qrTimeout, Duration.toMillis))
    // a replaced socket may still be busy; its writes must not land after ours (or after a wipe)
    const live = () => gen === generation
    const keys: typeof a.state.keys = {
      get: (type, ids) => a.state.keys.get(type, ids),
      set: (data) => (live() ? a.state.keys.set(data) : Promise.resolve())
    }
    const s = yield* Effect.try(() =>
      makeWASocket({
        auth: { creds: a.state.creds, keys },
        waWebSocketUrl: config.websocketUrl,
        logger,
        // the bundled WhatsApp Web version: never fetched at run time
        connectTimeoutMs: Duration.toMillis(config.connectTimeout),
        defaultQueryTimeoutMs: Duration.toMillis(config.queryTimeout),
        keepAliveIntervalMs: Duration.toMillis(config.keepAliveInterval),
        ...(qrTimeout === undefined ? {} : { qrTimeout }),
        markOnlineOnConnect: false,
        syncFullHistory: false,
        // no chat history import; still process the other sync types (they carry LID mappings)
        shouldSyncHistoryMessage: ({ syncType }) => syncType !== RECENT && syncType !== FULL,
        generateHighQualityLinkPreview: false,
        getMessage: async () => undefined
      })
    ).pipe(Effect.orDie)
    socket = s
    s.ev.on("creds.update", () => {
      if (!live()) return
      a.saveCreds().catch((error) =>
        Runtime.runFork(runtime)(Effect.logError("qr creds not saved", error).pipe(Effect.annotateLogs(annotations)))
      )
    })
    // a socket whose WebSocket never opened did not reach WhatsApp: its close is a connection error
    let reached = false
    s.ws.on("open", () => {
      reached = true
    })
    s.ev.on("connection.update", (update) => {
      if (update.qr) offer({ _tag: "SocketQr", generation: gen, code: update.qr })
      if (update.connection === "open") offer({ _tag: "SocketOpen", generation: gen })
      if (update.reachoutTimeLock) {
        offer({ _tag: "SocketRestriction", generation: gen, timelock: update.reachoutTimeLock })
      }
      if (update.connection === "close") {
        const error = update.lastDisconnect?.error
        offer({
          _tag: "SocketClosed",
          generation: gen,
          code: closeCodeOf(error),
          failure: reached ? undefined : classifyConnectFailure(error, {
            websocketUrl: config.websocketUrl,
            connectTimeoutMs: Duration.toMillis(config.connectTimeout)
          })
        })
      }
    })
    s.ev.on("message-capping.update", (capping) => offer({ _tag: "SocketRestriction", generation: gen, capping }))
    // `notify`: heard live; `append`: delivered after a reconnect (what came while the link was
    // down). Both are inbound; Baileys acknowledges both to WhatsApp, so neither may be skipped.
    // Chat history (`messaging-history.set`) is not inbound and is not listened to.
    s.ev.on("messages.upsert", ({ messages }) => offer({ _tag: "SocketUpsert", generation: gen, messages }))
    s.ev.on("lid-mapping.update", ({ lid, pn }) => offer({ _tag: "SocketLidMapping", generation: gen, lid, pn }))
    s.ev.on("messages.update", (updates) => {
      const items: Array<RawReceipt> = []
      for (const u of updates) {
        const decoded = decodeUpdate(u)
        if (Option.isSome(decoded) && decoded.value.key.fromMe && typeof decoded.value.update.status === "number") {
          items.push({ id: decoded.value.key.id, status: decoded.value.update.status })
        }
      }
      if (items.length > 0) offer({ _tag: "SocketReceipts", generation: gen, items })
    })
    // WhatsApp's ack of our message = `sent`; an ack with an error is WhatsApp refusing it
    // (Baileys only logs that and marks it ERROR): the message fails (`QrRestrictions`)
    s.ws.on("CB:ack,class:message", (node: BinaryNode) => {
      const id = node.attrs["id"]
      const error = node.attrs["error"]
      if (!id) return
      if (error === undefined) {
        offer({ _tag: "SocketReceipts", generation: gen, items: [{ id, status: Status.SERVER_ACK }] })
      } else offer({ _tag: "SocketRejected", generation: gen, id, error })
    })
  })

  const reportReceipts = (items: ReadonlyArray<RawReceipt>, at: number) =>
    Effect.forEach(items, (item) => {
      const status = receiptStatus(item.status)
      const key = `${item.id}:${status}`
      if (status === undefined || reported.has(key)) return Effect.void
      if (reported.size > 10_000) reported.clear()
      reported.add(key)
      return publish({ _tag: "receipt", channelId, messageId: item.id, status, at })
    }, { discard: true })

  /** A restriction signal: counted, and shown in the channel's status reason. */
  const signalled = (reason: ChannelStateMachine.QrRestrictionReason) =>
    Effect.zipRight(QrProtectionMetrics.signal(reason), move({ _tag: "Restriction", reason }))

  /** The same, reported as the channel's last restriction signal (`GET .../qr/safety`). */
  const restricted = (reason: ChannelStateMachine.QrRestrictionReason) =>
    Clock.currentTimeMillis.pipe(
      Effect.flatMap((at) => publish({ _tag: "restriction", channelId, signal: reason, at })),
      Effect.zipRight(signalled(reason))
    )

  /** WhatsApp refused one of our messages: it fails, and a restriction shows on the channel. */
  const onRejected = (id: string, error: string) =>
    Effect.gen(function*() {
      const rejection = classifyAckError(error)
      const key = `${id}:rejected`
      if (reported.has(key)) return
      reported.add(key)
      yield* Effect.logWarning("qr message refused by WhatsApp").pipe(
        Effect.annotateLogs({ ...annotations, message_id: id, error_code: error, failure_code: rejection.code })
      )
      yield* publish({
        _tag: "rejected",
        channelId,
        messageId: id,
        code: rejection.code,
        reason: rejection.reason,
        retryable: rejection.retryable,
        at: yield* Clock.currentTimeMillis
      })
      yield* QrProtectionMetrics.refused(rejection.code)
      if (rejection.channelReason !== null) yield* restricted(rejection.channelReason)
    })

  /** WhatsApp's reach-out timelock or new-chat quota: recorded on the channel, and its reason. */
  const onRestriction = (timelock: unknown, capping: unknown) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const lock = timelock === undefined ? undefined : timelockSignal(timelock, now)
      const quota = capping === undefined ? undefined : cappingSignal(capping)
      if (lock === undefined && quota === undefined) return
      yield* Effect.logWarning("qr number restriction reported by WhatsApp").pipe(Effect.annotateLogs({
        ...annotations,
        ...(lock === undefined
          ? {}
          : { timelock_until: lock.until === null ? "lifted" : new Date(lock.until).toISOString() }),
        ...(quota === undefined ? {} : { new_chat_quota: `${quota.used}/${quota.total}` })
      }))
      const reason = lock?.channelReason ?? quota?.channelReason
      yield* publish({
        _tag: "restriction",
        channelId,
        ...(lock === undefined ? {} : { timelockUntil: lock.until }),
        ...(quota === undefined ? {} : {
          newChatQuota: { total: quota.total, used: quota.used, cycleEndsAt: quota.cycleEndsAt }
        }),
        ...(reason ? { signal: reason, at: now } : {})
      })
      if (reason) yield* signalled(reason)
    })

  /** LID mappings reported on this connection (each is reported once per connection) */
  const mapped = new Set<string>()

  const reportMapping = (whatsappLid: string | null, phoneNumber: string | null) =>
    Effect.suspend(() => {
      if (whatsappLid === null || phoneNumber === null) return Effect.void
      const key = `${whatsappLid}:${phoneNumber}`
      if (mapped.has(key)) return Effect.void
      if (mapped.size > 10_000) mapped.clear()
      mapped.add(key)
      return publish({ _tag: "lid_mapping", channelId, whatsappLid, phoneNumber })
    })

  const onUpsert = (messages: ReadonlyArray<WAMessage>) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      for (const m of messages) {
        if (typeof m?.key?.id !== "string") {
          // without WhatsApp's id it can be neither recorded once nor told apart: counted and logged
          yield* InboundMetrics.countInbound("unsupported", "ignored", "no_id")
          yield* Effect.logWarning("qr inbound message without an id ignored").pipe(Effect.annotateLogs(annotations))
          continue
        }
        if (m.key.fromMe === true) {
          // ours (or sent from the phone): not inbound. A receipt that came while our own upsert
          // was buffered is folded into it.
          if (typeof m.status === "number") yield* reportReceipts([{ id: m.key.id, status: m.status }], now)
          continue
        }
        const translated = fromBaileys(m, now)
        if (translated._tag === "ignored") {
          yield* InboundMetrics.countInbound(translated.type, "ignored", translated.reason)
          // group chats and status posts are routine on any busy number: their lines are debug
          const log = ROUTINE_IGNORED.has(translated.reason) ? Effect.logDebug : Effect.logInfo
          yield* log("qr inbound message ignored").pipe(Effect.annotateLogs({
            ...annotations,
            reason: translated.reason,
            provider_message_id: translated.providerMessageId,
            kind: translated.kind ?? "none",
            sender: translated.sender ?? "none"
          }))
          continue
        }
        const { content } = translated
        // a message that names both forms of its sender reveals the mapping
        yield* reportMapping(content.sender.whatsappLid, content.sender.phoneNumber)
        yield* publish({ _tag: "inbound", channelId, content })
      }
    })

  const giveUp = (closeCode: number | null) =>
    Effect.gen(function*() {
      qr = null
      yield* move({ _tag: "GaveUp" }, closeCode, connectionError)
    })

  /** WhatsApp answered: connection errors so far are over. */
  const clearConnectionError = () => {
    connectFailures = 0
    connectionError = null
  }

  /** Records and reports why an attempt could not reach WhatsApp (`nextAttemptAt` null: giving up). */
  const reportFailure = (failure: QrConnectFailure, nextAttemptAt: number | null) =>
    Effect.gen(function*() {
      connectionError = { reason: failure.reason, message: failure.message, failures: connectFailures, nextAttemptAt }
      yield* QrMetrics.unreachable(failure.reason)
      yield* Effect.logWarning("qr connection attempt could not reach WhatsApp").pipe(Effect.annotateLogs({
        ...annotations,
        reason: failure.reason,
        failures: connectFailures,
        detail: failure.message
      }))
      yield* publish({ _tag: "connection_error", channelId, ...connectionError })
    })

  /**
   * A transient close, or an attempt that could not reach WhatsApp (`failure`): back off with
   * jitter inside the budget, else give up. After `qr/start`, until a link opens, connection
   * failures have a budget of their own (`connectMaxFailures`).
   */
  const scheduleReconnect = (closeCode: number | null, failure?: QrConnectFailure) =>
    Effect.gen(function*() {
      if (failure) connectFailures++
      else clearConnectionError()
      const spent = attempts >= config.reconnectMaxAttempts ||
        (failure !== undefined && interactive && connectFailures >= config.connectMaxFailures)
      if (spent) {
        if (failure) yield* reportFailure(failure, null)
        return yield* giveUp(closeCode)
      }
      const base = Duration.toMillis(config.reconnectBaseDelay) * 2 ** attempts
      const ceiling = Math.min(Duration.toMillis(config.reconnectMaxDelay), base)
      // "equal jitter": between half and all of the exponential delay
      const delay = Math.round(ceiling / 2 + (yield* Random.next) * (ceiling / 2))
      attempts++
      yield* QrMetrics.reconnecting(closeCode)
      yield* move({ _tag: "LinkLost" }, closeCode)
      if (failure) yield* reportFailure(failure, (yield* Clock.currentTimeMillis) + delay)
      yield* Effect.logInfo("qr reconnect scheduled").pipe(Effect.annotateLogs({
        ...annotations,
        attempt: attempts,
        delay_ms: delay,
        ...(closeCode === null ? {} : { close_code: closeCode })
      }))
      const gen = generation
      reconnect = yield* Effect.sleep(Duration.millis(delay)).pipe(
        Effect.zipRight(Queue.offer(commands, { _tag: "ReconnectDue", generation: gen })),
        Effect.asVoid,
        Effect.forkIn(scope)
      )
    })

  /** Logged out (ours or from the phone): nothing of the link may survive. */
  const forgetLink = Effect.gen(function*() {
    yield* auth ? auth.forget : repo.wipe(channelId)
    auth = undefined
    qr = null
    phoneNumber = null
  })

  const onClosed = (code: number | undefined, failure: QrConnectFailure | undefined) =>
    Effect.gen(function*() {
      socket = undefined
      open = false
      const closeCode = code ?? null
      yield* Effect.logInfo("qr socket closed").pipe(Effect.annotateLogs({ ...annotations, close_code: String(code) }))
      yield* QrMetrics.closed(closeCode)
      // never reached WhatsApp: the code is Baileys' guess (408 for DNS, a proxy's HTTP status), not WhatsApp's word
      if (failure) return yield* scheduleReconnect(closeCode, failure)
      clearConnectionError()
      if (code === DisconnectReason.restartRequired) {
        if (attempts >= config.reconnectMaxAttempts) return yield* giveUp(closeCode)
        attempts++
        yield* QrMetrics.reconnecting(closeCode)
        return yield* openSocket
      }
      if (code === DisconnectReason.loggedOut) {
        yield* forgetLink
        return yield* move({ _tag: "LoggedOutFromPhone" }, closeCode)
      }
      const terminal = code === undefined ? undefined : TERMINAL.get(code)
      if (terminal) {
        qr = null
        return yield* move({ _tag: "Terminated", reason: terminal }, closeCode)
      }
      if (code === DisconnectReason.timedOut && !auth?.isPaired() && qrSequence > 0) {
        // every QR code expired: the user asks again (qr/start); never loop new pairing sessions
        qr = null
        yield* publish({ _tag: "expired", channelId })
        return yield* move({ _tag: "CodesExhausted" }, closeCode)
      }
      return yield* scheduleReconnect(closeCode)
    })

  /** Loads the stored auth state; the socket and budgets start afresh. */
  const reset = Effect.gen(function*() {
    yield* closeSocket
    attempts = 0
    clearConnectionError()
    interactive = false
    qr = null
    qrSequence = 0
    auth = yield* QrAuthState.load(channelId, config.keyring).pipe(Effect.provideService(QrAuthStateRepo, repo))
    return auth
  })

  const handle = (command: Command): Effect.Effect<void> => {
    switch (command._tag) {
      case "Start":
        return Effect.gen(function*() {
          // archived and suspended channels do not pair (the owner refuses qr/start before this)
          if (ChannelStateMachine.transitionChannel(status, { _tag: "Start" })._tag === "Refused") return
          yield* reset
          interactive = true
          yield* move({ _tag: "Start" })
          yield* openSocket
        }).pipe(Effect.ensuring(command.done))
      case "Resume":
        return Effect.gen(function*() {
          if (socket) return yield* command.done(true)
          const loaded = yield* reset
          if (!loaded.isPaired()) {
            // a pairing under way (or a link) that this owner cannot take over: say so, never hang
            yield* move({ _tag: "Interrupted" })
            return yield* command.done(false)
          }
          yield* move({ _tag: "Resume" })
          yield* openSocket
          yield* command.done(true)
        }).pipe(Effect.onError(() => command.done(false)))
      case "Logout":
        return Effect.gen(function*() {
          const s = socket
          const wasOpen = open
          // the 401 close our own logout causes is stale: handled here instead
          generation++
          socket = undefined
          open = false
          yield* cancelReconnect
          clearConnectionError()
          interactive = false
          if (s && wasOpen) {
            yield* Effect.promise(() => s.logout().catch(() => undefined)).pipe(
              Effect.timeout(config.queryTimeout),
              Effect.ignore
            )
          }
          if (s) yield* endSocket(s)
          yield* forgetLink
          yield* move({ _tag: "Logout" })
        }).pipe(Effect.ensuring(command.done))
      case "SocketQr":
        return command.generation !== generation ? Effect.void : Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          clearConnectionError()
          qrSequence++
          issuedCodes.push(command.code)
          if (issuedCodes.length > 50) issuedCodes.shift()
          const lifetime = Option.match(config.qrTimeout, {
            onNone: () => (qrSequence === 1 ? 60_000 : 20_000),
            onSome: Duration.toMillis
          })
          qr = { code: Redacted.make(command.code), expiresAt: now + lifetime, sequence: qrSequence }
          yield* publish({ _tag: "qr", channelId, ...qr })
          yield* move({ _tag: "CodeIssued" })
        })
      case "SocketOpen":
        return command.generation !== generation ? Effect.void : Effect.gen(function*() {
          open = true
          attempts = 0
          clearConnectionError()
          interactive = false
          qr = null
          phoneNumber = jidToE164(auth?.state.creds.me?.id) ?? null
          yield* move({ _tag: "Opened" })
        })
      case "SocketClosed":
        return command.generation !== generation ? Effect.void : onClosed(command.code, command.failure)
      case "SocketReceipts":
        return command.generation !== generation
          ? Effect.void
          : Effect.flatMap(Clock.currentTimeMillis, (now) => reportReceipts(command.items, now))
      case "SocketRejected":
        return command.generation !== generation ? Effect.void : onRejected(command.id, command.error)
      case "SendThrottled":
        // rate-overlimit on a send: the channel's sends pause (the Channel entity's back-off)
        return restricted("rate_limited")
      case "SocketRestriction":
        return command.generation !== generation ? Effect.void : onRestriction(command.timelock, command.capping)
      case "SocketUpsert":
        return command.generation !== generation ? Effect.void : onUpsert(command.messages)
      case "SocketLidMapping":
        return command.generation !== generation ? Effect.void : Effect.suspend(() => {
          const sender = senderOf({ remoteJid: command.lid, remoteJidAlt: command.pn })
          return reportMapping(sender?.whatsappLid ?? null, sender?.phoneNumber ?? null)
        })
      case "ReconnectDue":
        return command.generation !== generation ? Effect.void : Effect.suspend(() => {
          reconnect = undefined
          return openSocket
        })
    }
  }

  yield* Queue.take(commands).pipe(
    Effect.flatMap((command) =>
      handle(command).pipe(Effect.catchAllCause((cause) => Effect.logError("qr connection command failed", cause)))
    ),
    Effect.forever,
    Effect.annotateLogs(annotations),
    Effect.forkScoped
  )
  // the scope ends the socket; the link stays stored, so a later owner resumes it
  yield* Effect.addFinalizer(() => closeSocket)
  // this connection counts in its status until it ends (`move` moves it between statuses)
  yield* QrMetrics.moved(undefined, status)
  counted = true
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      counted = false
      return QrMetrics.ended(status)
    })
  )

  /** Runs a command on the actor and waits for its answer. */
  const ask = <A>(command: (done: (a: A) => Effect.Effect<void>) => Command) =>
    Effect.gen(function*() {
      const answer = yield* Deferred.make<A>()
      yield* Queue.offer(commands, command((a) => Effect.asVoid(Deferred.succeed(answer, a))))
      return yield* Deferred.await(answer)
    })

  const recipients = makeRecipientCheck()
  const typing = makeTyping(config.typingIndicator)

  const send = (message: QrOutboundText) =>
    Effect.suspend((): Effect.Effect<void, QrNotConnected | QrSendFailed | QrRecipientNotOnWhatsApp> => {
      const s = socket
      if (!s || !open) return Effect.fail(new QrNotConnected({ channelId, status }))
      const failed = (error: unknown) =>
        new QrSendFailed({
          channelId,
          messageId: message.messageId,
          reason: error instanceof Error ? error.message : String(error)
        })
      // a LID is WhatsApp's own address of someone who wrote to us: on WhatsApp, nothing to check
      const lid = LidAddress.addressedLid(message.to)
      const jid = lid === undefined ? e164ToJid(message.to) : message.to
      const chatState = (state: "composing" | "paused", to: string) => s.sendPresenceUpdate(state, to)
      const check = lid === undefined
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
          duration: Duration.times(config.queryTimeout, 2),
          onTimeout: () => new QrSendFailed({ channelId, messageId: message.messageId, reason: "timed out" })
        }),
        Effect.tapError((e) =>
          e._tag === "QrSendFailed" && isThrottled(e.reason)
            ? Queue.offer(commands, { _tag: "SendThrottled" })
            : Effect.void
        ),
        Effect.asVoid
      )
    }).pipe(
      Effect.withSpan("QrConnection.send", { attributes: { channel_id: channelId, message_id: message.messageId } })
    )

  const markRead = (messages: ReadonlyArray<InboundRef>) =>
    Effect.suspend((): Effect.Effect<void, QrNotConnected | QrSendFailed> => {
      const keys = messages.flatMap((m) => {
        const remoteJid = readerJid(m)
        return remoteJid === undefined ? [] : [{ remoteJid, id: m.providerMessageId, fromMe: false }]
      })
      if (keys.length === 0) return Effect.void
      const s = socket
      if (!s || !open) return Effect.fail(new QrNotConnected({ channelId, status }))
      const failed = (reason: string) => new QrSendFailed({ channelId, messageId: keys[0]!.id, reason })
      // one receipt per chat, its ids listed (Baileys groups the keys)
      return Effect.tryPromise({
        try: () => s.readMessages(keys),
        catch: (error) => failed(error instanceof Error ? error.message : String(error))
      }).pipe(
        Effect.timeoutFail({ duration: Duration.times(config.queryTimeout, 2), onTimeout: () => failed("timed out") })
      )
    }).pipe(
      Effect.withSpan("QrConnection.markRead", { attributes: { channel_id: channelId, messages: messages.length } })
    )

  const reupload = (message: WAMessage) =>
    Effect.suspend((): Effect.Effect<WAMessage, MediaDownloadFailed> => {
      const s = socket
      if (!s || !open) {
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
          duration: Duration.times(config.queryTimeout, 2),
          onTimeout: () =>
            new MediaDownloadFailed({
              retryable: true,
              reason: "The sender's phone did not answer the request to upload the file again"
            })
        })
      )
    }).pipe(Effect.withSpan("QrConnection.reupload", { attributes: { channel_id: channelId } }))

  return {
    channelId,
    capabilities: qrCapabilities,
    snapshot: Effect.sync(() => ({ channelId, status, phoneNumber, qr, connectionError })),
    subscribe: PubSub.subscribe(events),
    events: Stream.fromPubSub(events),
    start: ask<void>((done) => ({ _tag: "Start", done: done(undefined) })),
    resume: ask<boolean>((done) => ({ _tag: "Resume", done })),
    send,
    logout: ask<void>((done) => ({ _tag: "Logout", done: done(undefined) })),
    markRead,
    reupload
  } satisfies QrConnection
})
