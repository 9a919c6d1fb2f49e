/**
 * The Baileys socket of a QR connection: how one is opened (our options, the auth state, the log
 * scrubber), how what it reports becomes `QrSocketEvent`s for the connection's actor (each tagged
 * with the socket's generation so a replaced socket's reports can be told apart), and how its
 * reading is paused.
 */
import type { ChannelStateMachine } from "@switchboard/domain"
import makeWASocket, {
  type BinaryNode,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  proto,
  type WACallEvent,
  type WAMessage,
  type WASocket
} from "baileys"
import { type Context, Duration, Effect, Option, Runtime } from "effect"
import { makeBaileysLogger } from "./BaileysLogger.js"
import type * as QrAuthState from "./QrAuthState.js"
import { classifyConnectFailure, type QrConnectFailure } from "./QrConnectFailure.js"
import type { QrConnectionConfig } from "./QrConnectionConfig.js"
import { ackOf, groupReceiptsOf, type RawReceipt, receiptsOf } from "./QrReceipts.js"

/** The socket as sends see it: set only while its link is open; and the channel's status. */
export interface QrLink {
  readonly socket: WASocket | undefined
  readonly status: ChannelStateMachine.ChannelStatus
}

/** What a socket reports, for the actor to handle one at a time. */
export type QrSocketEvent =
  | {
    readonly _tag: "SocketQr"
    readonly generation: number
    readonly code: string
    /** QR codes this socket issues after this one (WhatsApp's `pair-device` refs left): the session's length */
    readonly left: number
  }
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
  | { readonly _tag: "SocketCalls"; readonly generation: number; readonly calls: ReadonlyArray<WACallEvent> }
  /** WhatsApp said these groups changed (`QrGroupChats` reads them again) */
  | { readonly _tag: "SocketGroupsChanged"; readonly generation: number; readonly jids: ReadonlyArray<string> }

const closeCodeOf = (error: unknown): number | undefined => {
  const code = (error as { output?: { statusCode?: unknown } } | undefined)?.output?.statusCode
  return typeof code === "number" ? code : undefined
}

const { FULL, RECENT } = proto.HistorySync.HistorySyncType

/** `end(undefined)`: closes and keeps the link (never waits long on a broken socket). */
export const end = (s: WASocket) =>
  Effect.promise(() => s.end(undefined).catch(() => undefined)).pipe(Effect.timeout("5 seconds"), Effect.ignore)

/**
 * Opens socket number `generation` with the stored auth state. Its reports go to `offer`; once
 * `live()` turns false (a newer socket, a wipe), its key and creds writes are dropped.
 */
export const open = (options: {
  readonly generation: number
  readonly live: () => boolean
  readonly auth: QrAuthState.QrAuthState
  readonly config: Context.Tag.Service<QrConnectionConfig>
  readonly runtime: Runtime.Runtime<never>
  readonly annotations: Record<string, string>
  /** what Baileys' log lines must never show (the QR codes issued so far) */
  readonly secrets: () => Iterable<string>
  readonly offer: (event: QrSocketEvent) => void
}): Effect.Effect<WASocket> =>
  Effect.gen(function*() {
    const { annotations, auth: a, config, live, offer, runtime } = options
    const gen = options.generation
    const logger = makeBaileysLogger({
      level: config.baileysLogLevel,
      runtime,
      annotations,
      secrets: () => [
        ...options.secrets(),
        a.state.creds.advSecretKey,
        ...(a.state.creds.pairingCode === undefined ? [] : [a.state.creds.pairingCode])
      ]
    })
    const qrTimeout = Option.getOrUndefined(Option.map(config.qrTimeout, Duration.toMillis))
    // a replaced socket may still be busy; its writes must not land after ours (or after a wipe)
    const keys: typeof a.state.keys = {
      get: (type, ids) => a.state.keys.get(type, ids),
      set: (data) => (live() ? a.state.keys.set(data) : Promise.resolve())
    }
    const s = yield* Effect.try(() =>
      makeWASocket({
        auth: { creds: a.state.creds, keys },
        waWebSocketUrl: config.websocketUrl,
        logger,
        // the configured WhatsApp Web version, else the bundled one: never fetched at run time
        ...Option.match(config.whatsappWebVersion, {
          onNone: () => ({}),
          onSome: (version) => ({ version: [...version] as [number, number, number] })
        }),
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
    // WhatsApp's refs, one per QR code; once they run out Baileys ends the socket (408)
    let refs = 0
    s.ws.on("CB:iq,type:set,pair-device", (stanza: BinaryNode) => {
      refs = getBinaryNodeChildren(getBinaryNodeChild(stanza, "pair-device"), "ref").length
    })
    s.ev.on("connection.update", (update) => {
      if (update.qr) offer({ _tag: "SocketQr", generation: gen, code: update.qr, left: Math.max(0, --refs) })
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
    // incoming calls, step by step (`QrCalls`)
    s.ev.on("call", (calls) => offer({ _tag: "SocketCalls", generation: gen, calls }))
    // a change WhatsApp notified in a group (`w:gp2`); the whole list Baileys read itself
    // (`groupFetchAllParticipating`, which carries `participants`) is `QrGroupChats.syncAll`'s
    const changed = (jids: ReadonlyArray<string>) => {
      if (jids.length > 0) offer({ _tag: "SocketGroupsChanged", generation: gen, jids })
    }
    s.ev.on("groups.update", (updates) => changed(updates.flatMap((u) => (u.id && !u.participants ? [u.id] : []))))
    s.ev.on("groups.upsert", (groups) => changed(groups.map((g) => g.id)))
    s.ev.on("group-participants.update", ({ id }) => changed([id]))
    s.ev.on("lid-mapping.update", ({ lid, pn }) => offer({ _tag: "SocketLidMapping", generation: gen, lid, pn }))
    s.ev.on("messages.update", (updates) => {
      const items = receiptsOf(updates)
      if (items.length > 0) offer({ _tag: "SocketReceipts", generation: gen, items })
    })
    // a participant's receipt of our message in a group chat
    s.ev.on("message-receipt.update", (updates) => {
      const items = groupReceiptsOf(updates)
      if (items.length > 0) offer({ _tag: "SocketReceipts", generation: gen, items })
    })
    // WhatsApp's ack of our message, or its refusal (`QrReceipts.ackOf`)
    s.ws.on("CB:ack,class:message", (node: BinaryNode) => {
      const ack = ackOf(node)
      if (ack?._tag === "Accepted") offer({ _tag: "SocketReceipts", generation: gen, items: [ack.receipt] })
      else if (ack?._tag === "Refused") offer({ _tag: "SocketRejected", generation: gen, id: ack.id, error: ack.error })
    })
    return s
  })

/** The `ws` WebSocket under a Baileys socket, where it can be paused (it is not in Baileys' types). */
const webSocketOf = (socket: WASocket | undefined): { pause(): void; resume(): void } | undefined => {
  const ws: unknown = socket === undefined ? undefined : Reflect.get(socket.ws, "socket")
  return typeof ws === "object" && ws !== null && "pause" in ws && "resume" in ws &&
      typeof ws.pause === "function" && typeof ws.resume === "function"
    ? {
      pause: () => Reflect.apply(ws.pause as () => void, ws, []),
      resume: () => Reflect.apply(ws.resume as () => void, ws, [])
    }
    : undefined
}

/**
 * Stops and restarts reading from WhatsApp on the live socket (`QrConnection.holdInput`,
 * `resumeInput`): its WebSocket paused, then resumed. A newer socket reads until held again.
 */
export const inputHold = (options: {
  readonly socket: () => WASocket | undefined
  readonly annotations: Record<string, string>
}) => {
  /** The socket whose reading is paused; a newer socket reads until held again. */
  let held: WASocket | undefined
  return {
    hold: (reason: string) =>
      Effect.suspend(() => {
        const socket = options.socket()
        const ws = webSocketOf(socket)
        if (ws === undefined || held === socket) return Effect.void
        held = socket
        ws.pause()
        return Effect.logWarning("qr link stops reading from WhatsApp").pipe(
          Effect.annotateLogs({ ...options.annotations, reason })
        )
      }),
    resume: Effect.suspend(() => {
      const socket = options.socket()
      const ws = webSocketOf(socket)
      const was = held
      held = undefined
      if (ws === undefined || was !== socket) return Effect.void
      ws.resume()
      return Effect.logInfo("qr link reads from WhatsApp again").pipe(Effect.annotateLogs(options.annotations))
    })
  } as const
}
