/**
 * A local fake of WhatsApp's multi-device edge that the REAL Baileys pairs with, sends through and
 * receives from, offline. Each test starts its own server on port 0.
 *
 * Covered: the Noise handshake with a fake certificate chain, `pair-device` with rotating refs, a
 * fake phone that scans the QR string (`pair-success`, then the 515 restart), login by Noise key,
 * prekey upload, usync, prekey fetch, contacts that decrypt what Baileys sends and answer with the
 * ack, delivered and read receipts, inbound texts, and the failure cases: logout from the phone
 * (401), a second login with the same device (440), a network drop (428), stream errors (503),
 * QR expiry (408, Baileys' own timer once the refs run out), calls (offers, terminates, rejects:
 * `FakeCalls`).
 *
 * ```ts
 * const wa = yield* FakeWhatsApp.scoped()
 * useFakeWhatsAppRoot(wa.rootPublicKey)
 * yield* wa.phone.scan(qr)
 * const alice = wa.contact("+15559990000")
 * yield* alice.says("hi")
 * alice.lastReceived()?.text
 * ```
 */
import {
  aesEncryptGCM,
  type BinaryNode,
  Curve,
  downloadContentFromMessage,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  hkdf,
  jidDecode,
  type KeyPair,
  proto
} from "baileys"
import { Effect } from "effect"
import { createHmac, randomBytes } from "node:crypto"
import { EventEmitter, once } from "node:events"
import type { AddressInfo } from "node:net"
import { type WebSocket, WebSocketServer } from "ws"
import { type CallLine, FakeCall } from "./FakeCalls.js"
import * as FakeCodePairing from "./FakeCodePairing.js"
import { FakeGroup, type GroupLine, type GroupOptions } from "./FakeGroups.js"
import { MediaHost, type PublishedMedia } from "./MediaHost.js"
import { FakeCertificateAuthority, NoiseResponder } from "./NoiseResponder.js"
import { type CompanionKeys, SignalPeer } from "./SignalPeer.js"

const S_WA = "s.whatsapp.net"
const unixNow = () => String(Math.floor(Date.now() / 1000))
const digits = (e164: string) => e164.replace(/^\+/, "")

interface LinkedDevice extends CompanionKeys {
  readonly noiseKey: Buffer
  readonly jid: string
}

interface Connection {
  readonly ws: WebSocket
  readonly noise: NoiseResponder
  stage: "hello" | "finish" | "open"
  registration?: { identityKey: Buffer; noiseKey: Buffer; registrationId: number }
  refs: Array<string>
  /** a pairing by code under way on this connection (`FakeCodePairing`) */
  codePairing?: {
    readonly hello: FakeCodePairing.CompanionHello
    /** the phone's attempt waiting for `companion_finish` */
    attempt?: {
      readonly ephemeralSecret: Buffer
      readonly done: (outcome: CodeOutcome) => void
    } | undefined
  } | undefined
  device?: LinkedDevice
  readonly pending: Map<string, (node: BinaryNode) => void>
  seq: number
  /** epoch ms the WebSocket was accepted */
  readonly openedAt: number
}

/** One message Baileys sent to a fake contact, as the contact decrypted it. */
export interface ReceivedMessage {
  /** the WhatsApp message id (the `id` attribute of the stanza) */
  readonly id: string
  /** the chat the stanza was addressed to: the contact's number or LID jid (its `to` attribute) */
  readonly to: string
  readonly text: string | undefined
  /** what the contact's phone shows: the kind, decoded from the message's member */
  readonly kind: ReceivedKind
  /** the WhatsApp id of the message this one quotes (`contextInfo.stanzaId`) */
  readonly quotedId: string | undefined
  readonly message: proto.Message
}

/** The kinds a fake contact decodes; `other` names the member of anything else. */
export type ReceivedKind =
  | { readonly kind: "text"; readonly text: string }
  | {
    readonly kind: "location"
    readonly latitude: number
    readonly longitude: number
    readonly name: string | undefined
    readonly address: string | undefined
  }
  | { readonly kind: "reaction"; readonly targetId: string; readonly targetFromMe: boolean; readonly emoji: string }
  | { readonly kind: "image"; readonly mimetype: string | undefined; readonly caption: string | undefined }
  | { readonly kind: "video"; readonly mimetype: string | undefined; readonly caption: string | undefined }
  | {
    readonly kind: "document"
    readonly mimetype: string | undefined
    readonly fileName: string | undefined
    readonly caption: string | undefined
  }
  | { readonly kind: "audio"; readonly mimetype: string | undefined; readonly ptt: boolean }
  | { readonly kind: "sticker"; readonly mimetype: string | undefined }
  | { readonly kind: "other"; readonly member: string }

const orUndefined = <A>(value: A | null | undefined): A | undefined => value ?? undefined

/** What a received message is, as a phone would render it. */
export const decodeReceived = (message: proto.IMessage): ReceivedKind => {
  const text = message.conversation ?? message.extendedTextMessage?.text
  if (typeof text === "string") return { kind: "text", text }
  const location = message.locationMessage
  if (location) {
    return {
      kind: "location",
      latitude: location.degreesLatitude ?? NaN,
      longitude: location.degreesLongitude ?? NaN,
      name: orUndefined(location.name),
      address: orUndefined(location.address)
    }
  }
  const reaction = message.reactionMessage
  if (reaction) {
    // from the contact's side, a key with `fromMe` names a message the linked account sent
    return {
      kind: "reaction",
      targetId: reaction.key?.id ?? "",
      targetFromMe: reaction.key?.fromMe === true,
      emoji: reaction.text ?? ""
    }
  }
  const image = message.imageMessage
  if (image) return { kind: "image", mimetype: orUndefined(image.mimetype), caption: orUndefined(image.caption) }
  const video = message.videoMessage
  if (video) return { kind: "video", mimetype: orUndefined(video.mimetype), caption: orUndefined(video.caption) }
  const document = message.documentMessage
  if (document) {
    return {
      kind: "document",
      mimetype: orUndefined(document.mimetype),
      fileName: orUndefined(document.fileName),
      caption: orUndefined(document.caption)
    }
  }
  const audio = message.audioMessage
  if (audio) return { kind: "audio", mimetype: orUndefined(audio.mimetype), ptt: audio.ptt === true }
  const sticker = message.stickerMessage
  if (sticker) return { kind: "sticker", mimetype: orUndefined(sticker.mimetype) }
  const member = Object.keys(message).find((k) => (message as Record<string, unknown>)[k] != null)
  return { kind: "other", member: member ?? "none" }
}

/** The WhatsApp id a message quotes, from whichever member carries the contextInfo. */
const quotedIdOf = (message: proto.IMessage): string | undefined => {
  for (const member of Object.values(message)) {
    if (member !== null && typeof member === "object" && "contextInfo" in member) {
      const id = (member as { contextInfo?: proto.IContextInfo | null }).contextInfo?.stanzaId
      if (id) return id
    }
  }
  return undefined
}

/** Whether version `a` is older than `b` (WhatsApp Web versions, compared part by part). */
const isOlder = (a: readonly [number, number, number], b: readonly [number, number, number]): boolean => {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! < b[i]!
  return false
}

/** A ciphertext damaged on the way: its last bytes (the MAC of a Signal message) flipped. */
const garble = (ciphertext: Uint8Array): Uint8Array => {
  const out = Uint8Array.from(ciphertext)
  for (let i = Math.max(0, out.length - 8); i < out.length; i++) out[i] = out[i]! ^ 0xff
  return out
}

export interface FakeWhatsAppOptions {
  /** how many QR refs the server hands out (the real server sends 6) */
  readonly refs?: number
  /** the account's phone number, E.164 */
  readonly phoneNumber?: string
  /** prints every stanza (debugging a Baileys bump) */
  readonly trace?: boolean
  /**
   * every scan links a companion of its own (devices 7, 8, 9, ...), so one server holds many
   * channels at once (bench/qrSoak.ts); by default each scan links device 7 again
   */
  readonly manyCompanions?: boolean
}

/**
 * How a message stanza addresses its sender, as WhatsApp does: by phone number (`pn`), by LID only
 * (`lid`), or by one with the other in `sender_pn`/`sender_lid` (Baileys' `remoteJidAlt`).
 */
export type Addressing = "pn" | "lid" | "lid+pn" | "pn+lid"

export interface SendOptions {
  readonly addressing?: Addressing
  /**
   * a direct chat (default), a group the contact writes in, or the contact's status; `group`
   * without `group` below: the server's one default group, the contact made a member
   */
  readonly chat?: "direct" | "group" | "status"
  /** the group chat the contact writes in (`FakeWhatsApp.group`), encrypted with its sender key */
  readonly group?: FakeGroup
  /** the WhatsApp id to use (default: a new one) */
  readonly id?: string
  /**
   * the ciphertext arrives damaged, so the companion cannot decrypt it and asks for it again (a
   * `retry` receipt); the contact then sends it again, intact, under the same id
   */
  readonly garbled?: boolean
  /**
   * the stanza's `offline` attribute on a message delivered live: `"0"` as WhatsApp marks some
   * live messages (Baileys reads any value as offline: issue 2810)
   */
  readonly offline?: "0"
}

/** The media kinds a contact can send, with the message member and the media type of its keys. */
/** What a contact's phone puts in a media message pointing at a file already on the media host. */
export const mediaMember = (media: PublishedMedia, fields: Record<string, unknown>) => ({
  url: media.url,
  directPath: media.directPath,
  mediaKey: media.mediaKey,
  fileSha256: media.fileSha256,
  fileEncSha256: media.fileEncSha256,
  fileLength: media.fileLength,
  mediaKeyTimestamp: Math.floor(Date.now() / 1000),
  ...fields
})

export type MediaKindName = "image" | "video" | "audio" | "document" | "sticker"

/** A remote WhatsApp user: decrypts what we send, answers with receipts, says things. */
export class FakeContact {
  /** messages as the contact's phone shows them: one per WhatsApp id, as the real app does */
  readonly received: Array<ReceivedMessage> = []
  /** the id of every message stanza that reached this contact, duplicates included */
  readonly stanzaIds: Array<string> = []
  /**
   * Read receipts (blue ticks) the companion sent for this contact's messages, one entry per
   * message id, in order, with the chat they were addressed to (number or LID jid)
   */
  readonly readReceipts: Array<{ readonly id: string; readonly to: string }> = []
  /**
   * What reached this contact's chat, in the order it arrived: chat states ("typing...",
   * `composing`/`paused`) and message stanzas (by id), each with its arrival time (epoch ms)
   */
  readonly chat: Array<
    { readonly stanza: "composing" | "paused" | "message"; readonly id?: string; readonly at: number }
  > = []
  /**
   * Message stanzas the server acknowledged (`sent` on our side) that never reached this contact's
   * phone, with the reason: what a test names when a message it waits for does not come
   */
  readonly undelivered: Array<{ readonly id: string; readonly reason: string }> = []
  /** message ids this phone asked to be sent again (a `retry` receipt), one entry per request */
  readonly retryReceipts: Array<string> = []
  /** how many of the next message stanzas this phone fails to decrypt (a lost session): `failDecrypts` */
  decryptFailures = 0
  /** receipts this contact sent for our messages */
  readonly receiptsSent: Array<{ readonly id: string; readonly type: "delivered" | "read" }> = []
  /** answer our messages with a delivered receipt, then a read receipt */
  autoReceipts = { delivered: true, read: true }
  /**
   * WhatsApp refuses our messages to this contact with this ack error (e.g. `"463"`: a restricted
   * account's reach-out), instead of delivering them; `undefined` delivers
   */
  ackError: string | undefined = undefined
  /**
   * WhatsApp answers a device lookup (usync) that names this contact with this IQ error, e.g.
   * `{code: "429", text: "rate-overlimit"}` (throttled); `undefined` answers it
   */
  lookupError: { readonly code: string; readonly text: string } | undefined = undefined
  /** device lookups (usync) that named this contact */
  lookups = 0
  /** WhatsApp never answers our messages to this contact: no ack, no receipts (a lost answer) */
  silent = false
  /** ids of our messages WhatsApp refused (`ackError`) */
  readonly refused: Array<string> = []
  /** @internal */
  readonly peer = new SignalPeer()
  /** @internal */
  readonly lidUser = `${Math.floor(1e14 + Math.random() * 8e14)}`

  constructor(private readonly server: FakeWhatsApp, readonly number: string) {}

  /** @internal */
  get user() {
    return digits(this.number)
  }

  /** Sends a text to the linked companion; resolves with the WhatsApp message id. */
  says(text: string, options: SendOptions = {}): Effect.Effect<string> {
    return this.sends({ conversation: text }, options)
  }

  /**
   * Sends any message to the linked companion (held while no companion is connected, then
   * delivered as offline messages after its next login); resolves with the WhatsApp message id.
   */
  sends(message: proto.IMessage, options: SendOptions = {}): Effect.Effect<string> {
    return Effect.promise(() => this.server.pushMessage(this, message, options))
  }

  /** This contact's phone reports our message `id` delivered or read (with `autoReceipts` off). */
  acknowledges(id: string, type: "delivered" | "read"): Effect.Effect<void> {
    return Effect.sync(() => this.server.sendReceipt(this, id, type))
  }

  /**
   * A view-once message as a linked device gets it: only WhatsApp's marker
   * (`<unavailable type="view_once"/>`, no `<enc>`); the content stays on the phone.
   */
  sendsViewOnce(options: SendOptions = {}): Effect.Effect<string> {
    return Effect.promise(() =>
      this.server.pushMarker(this, [{ tag: "unavailable", attrs: { type: "view_once" } }], options)
    )
  }

  /**
   * A message WhatsApp delivers to the linked device without its content ("open it on your phone",
   * e.g. from an ad): no `<enc>`. The device asks the phone for it (a placeholder resend request);
   * the phone answers with `message` under the same id (held while `holdResends` is on).
   */
  sendsWithoutContent(message: proto.IMessage, options: SendOptions = {}): Effect.Effect<string> {
    return Effect.promise(() => this.server.pushMarker(this, [], options, message))
  }

  /**
   * WhatsApp tells the device the phone number behind this contact's LID (a `mex`
   * `NotificationLinkedProfilesUpdates`, which Baileys reports as `lid-mapping.update`).
   */
  revealsNumber(): Effect.Effect<void> {
    return Effect.sync(() => this.server.notifyLinkedProfile(this))
  }

  /**
   * Sends a file as a phone does: encrypted onto the media host, then a message pointing at it.
   * `fields` adds to the media member (`mimetype`, `caption`, `fileName`, `ptt`, `contextInfo`).
   */
  sendsMedia(
    kind: MediaKindName,
    bytes: Uint8Array,
    fields: Record<string, unknown> = {},
    options: SendOptions = {}
  ): Effect.Effect<{ readonly id: string; readonly media: PublishedMedia }> {
    return Effect.promise(async () => {
      const media = await this.server.media.publish(bytes, kind)
      const member = mediaMember(media, fields)
      const id = await this.server.pushMessage(this, { [`${kind}Message`]: member }, options)
      this.server.published.set(id, media)
      return { id, media }
    })
  }

  /**
   * The bytes of a file this contact received, as its phone gets them: downloaded from the fake
   * media host at the message's `url` and decrypted with its `mediaKey` (Baileys' own download).
   */
  downloads(received: ReceivedMessage, kind: MediaKindName): Effect.Effect<Buffer> {
    return Effect.promise(async () => {
      const member = received.message[`${kind}Message`]
      if (!member) throw new Error(`message ${received.id} carries no ${kind}`)
      const chunks: Array<Buffer> = []
      for await (const chunk of await downloadContentFromMessage(member, kind)) chunks.push(chunk as Buffer)
      return Buffer.concat(chunks)
    })
  }

  /**
   * The next `count` messages for this contact do not decrypt on its phone, as after a lost
   * session: the phone answers each with a `retry` receipt, as WhatsApp does.
   */
  failDecrypts(count = 1): void {
    this.decryptFailures = count
  }

  /** What became of message `id` on its way to this phone, for a test's failure message. */
  deliveryReport(id: string): string {
    const stanzas = this.chat.filter((c) => c.stanza === "message" && c.id === id).length
    const why = this.undelivered.filter((u) => u.id === id).map((u) => u.reason)
    return [
      `${stanzas} message stanza(s) with this id reached the server for this contact`,
      `received: ${this.received.some((m) => m.id === id)}`,
      ...why.map((w) => `not delivered: ${w}`),
      ...this.server.serverErrors.map((e) => `server error: ${e}`)
    ].join("; ")
  }

  /**
   * This contact calls the linked number (`FakeCalls`); nothing rings until `offer`. `byLid`: as
   * WhatsApp often does, the call names the caller by LID, with the number beside it (`caller_pn`).
   */
  calls(options: { readonly video?: boolean; readonly byLid?: boolean } = {}): FakeCall {
    const pn = `${this.user}@${S_WA}`
    return options.byLid === true
      ? new FakeCall(this.server.callLine, `${this.lidUser}@lid`, options.video === true, pn)
      : new FakeCall(this.server.callLine, pn, options.video === true)
  }

  lastReceived(): ReceivedMessage | undefined {
    return this.received[this.received.length - 1]
  }

  /** Waits for the next message Baileys sends this contact (or the first, if one already came). */
  nextReceived(after = this.received.length): Effect.Effect<ReceivedMessage> {
    return Effect.async<ReceivedMessage>((resume) => {
      const check = () => {
        const m = this.received[after]
        if (m) {
          this.server.events.off("received", check)
          resume(Effect.succeed(m))
        }
      }
      this.server.events.on("received", check)
      check()
      return Effect.sync(() => this.server.events.off("received", check))
    })
  }
}

/** What the phone shows after the user typed a pairing code. */
export type CodeOutcome = "linked" | "refused"

/** The account's primary device: scans QR codes, takes pairing codes, unlinks companions. */
export class FakePhone {
  /** @internal */
  readonly peer = new SignalPeer()
  /** @internal */
  readonly lidUser = "987654321012345"
  /** @internal */
  readonly accountKey: KeyPair = Curve.generateKeyPair()

  constructor(private readonly server: FakeWhatsApp, readonly number: string) {}

  /** @internal */
  get user() {
    return digits(this.number)
  }

  /**
   * Scans a QR string as the phone does: mints a `pair-success` from the QR's keys and advSecret,
   * checks the companion's signature, then forces the 515 restart.
   */
  scan(qr: string): Effect.Effect<void> {
    return Effect.promise(() => this.server.scan(qr))
  }

  /**
   * "Link with phone number instead": the user types `code` (8 characters, as shown by the
   * companion) on the phone. The phone unwraps the companion's key with it and answers with its
   * own; the companion finishes, and on the right code the device is linked (`pair-success`, then
   * the 515 restart) and this is `linked`. A wrong code is `refused` (the bundle does not open, as
   * the phone says "Couldn't link device"), and the user may type again.
   */
  typesCode(code: string): Effect.Effect<CodeOutcome> {
    return Effect.promise(() => this.server.typeCode(code))
  }

  /** The numbers companions asked pairing codes for (digits), in order, refused ones included. */
  get codeRequests(): ReadonlyArray<string> {
    return this.server.codeRequests
  }

  /** "Linked devices > Log out" on the phone: the companion gets a 401 and its device is gone. */
  unlink(): void {
    this.server.unlinkAll()
  }
}

export class FakeWhatsApp {
  readonly events = new EventEmitter()
  readonly phone: FakePhone
  /** counters tests use to prove there is no reconnect loop */
  readonly stats = { connections: 0, logins: 0, pairings: 0 }
  /** numbers (digits) asked about in "is it on WhatsApp?" queries (usync `contact`), in order */
  readonly contactChecks: Array<string> = []
  /** the WhatsApp Web version each client announced (`primary.secondary.tertiary`) */
  readonly clientVersions: Array<string> = []
  private readonly ca = new FakeCertificateAuthority()
  private readonly staticKey = Curve.generateKeyPair()
  private readonly certChain = this.ca.chainFor(this.staticKey.public)
  private readonly connections = new Set<Connection>()
  private readonly pairingByRef = new Map<string, Connection>()
  private readonly devices = new Map<string, LinkedDevice>()
  private readonly contacts = new Map<string, FakeContact>()
  /** what contacts sent, by message id: sent again (a new session) when the companion asks (`retry` receipt) */
  private readonly sentByContacts = new Map<
    string,
    { readonly contact: FakeContact; readonly message: proto.IMessage; readonly options: SendOptions }
  >()
  /** message ids the companion asked to be sent again */
  readonly retryRequests: Array<string> = []
  /** calls the companion rejected (`<call><reject>`), in order */
  readonly callRejects: Array<{ readonly callId: string; readonly to: string }> = []
  /** @internal — what `FakeCall` needs of the server */
  readonly callLine: CallLine = {
    toCompanion: (node) => {
      if (!this.session) throw new Error("no companion is logged in")
      this.send(this.session, node)
    },
    phoneJid: () => `${this.phone.user}@${S_WA}`,
    rejects: this.callRejects,
    until: (predicate) => this.until(predicate)
  }
  /** numbers (digits) companions asked pairing codes for (`companion_hello`), in order */
  readonly codeRequests: Array<string> = []
  /** errors that ended a connection while the server handled its frames */
  readonly serverErrors: Array<string> = []
  /** message and receipt stanzas for the companion while none is connected: delivered as offline at its next login */
  private readonly offlineQueue: Array<BinaryNode> = []
  /** media a contact sent, by message id (answers the companion's re-upload requests) */
  readonly published = new Map<string, PublishedMedia>()
  /** re-upload requests the companion made (message ids) */
  readonly reuploadRequests: Array<string> = []
  private failLogins: { code: number; remaining: number } | undefined
  /** logins waiting for `releaseLogins` (the link is down meanwhile) */
  private heldLogins: Array<() => void> | undefined
  private holdOffline = false
  private heldResends: Array<() => Promise<void>> | undefined
  private minimumVersion: readonly [number, number, number] | undefined
  /** messages delivered without content (`sendsWithoutContent`), which the phone sends on request */
  private readonly withoutContent = new Map<
    string,
    { readonly contact: FakeContact; readonly message: proto.IMessage; readonly options: SendOptions }
  >()
  private session: Connection | undefined
  /** companions linked so far with `manyCompanions` (the next one is device 7 + this) */
  private companionsLinked = 0
  /** an offline status broadcast waiting for the companion's ack (`deliverOffline`) */
  private pendingStatus: { readonly conn: Connection; readonly id: string; readonly delivered: number } | undefined
  /** every `<ack class="message">` the companion sent: the message id, and the error of a refusal */
  readonly messageAcks: Array<{ readonly id: string; readonly error?: string }> = []

  private constructor(
    private readonly wss: WebSocketServer,
    private readonly options: FakeWhatsAppOptions,
    /** the media host (HTTPS; its CA must be trusted, see `MediaTls`) */
    readonly media: MediaHost
  ) {
    this.events.setMaxListeners(100)
    this.phone = new FakePhone(this, options.phoneNumber ?? "+15550001111")
    wss.on("connection", (ws) => this.onConnection(ws))
  }

  /** Starts a server on 127.0.0.1, port 0. */
  static async start(options: FakeWhatsAppOptions = {}): Promise<FakeWhatsApp> {
    const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/ws/chat" })
    await once(wss, "listening")
    return new FakeWhatsApp(wss, options, await MediaHost.start())
  }

  /** A server for the current scope, stopped when it closes. */
  static scoped(options: FakeWhatsAppOptions = {}) {
    return Effect.acquireRelease(
      Effect.promise(() => FakeWhatsApp.start(options)),
      (wa) => Effect.promise(() => wa.stop())
    )
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}/ws/chat`
  }

  /** The fake root the client must trust (see `useFakeWhatsAppRoot`). */
  get rootPublicKey(): Uint8Array {
    return this.ca.root.public
  }

  /** Companions currently linked to the account. */
  get linkedDevices(): number {
    return this.devices.size
  }

  /** Open WebSocket connections right now. */
  get openConnections(): number {
    return [...this.connections].filter((c) => c.ws.readyState === c.ws.OPEN).length
  }

  async stop(): Promise<void> {
    for (const c of this.connections) c.ws.terminate()
    await new Promise<void>((resolve) => this.wss.close(() => resolve()))
    await this.media.stop()
  }

  /** A contact that exists on WhatsApp (usync finds it, its prekeys can be fetched). */
  contact(number: string): FakeContact {
    const existing = this.contacts.get(digits(number))
    if (existing) return existing
    const contact = new FakeContact(this, number)
    this.contacts.set(contact.user, contact)
    return contact
  }

  /** Network failure: every TCP connection dies without a goodbye (Baileys: 428). */
  dropConnections(): void {
    for (const c of this.connections) c.ws.terminate()
  }

  /** Drops every connection open longer than `ms` (each then reconnects: a rolling reconnect). */
  dropConnectionsOlderThan(ms: number): number {
    const old = [...this.connections].filter((c) => Date.now() - c.openedAt > ms)
    for (const c of old) c.ws.terminate()
    return old.length
  }

  /** `<stream:error code=.../>` to the logged-in session (e.g. 503). */
  streamError(code: number): void {
    if (this.session) this.send(this.session, { tag: "stream:error", attrs: { code: String(code) } })
  }

  /**
   * Logins from now on wait, unanswered, until `releaseLogins`: the companion stays offline, and
   * what contacts send meanwhile is held for it (offline delivery).
   */
  holdLogins(): void {
    this.heldLogins ??= []
  }

  /** Answers the held logins; later ones are answered at once. */
  releaseLogins(): void {
    const held = this.heldLogins ?? []
    this.heldLogins = undefined
    for (const login of held) login()
  }

  /** Whether a companion is logged in now. */
  get companionOnline(): boolean {
    return this.session?.device !== undefined && this.session.ws.readyState === this.session.ws.OPEN
  }

  /**
   * A GraphQL ("mex") notification to the logged-in session, as WhatsApp sends its account
   * signals: `NotificationUserReachoutTimelockUpdate` with
   * `{xwa2_notify_account_reachout_timelock: {is_active, time_enforcement_ends, enforcement_type}}`,
   * `MessageCappingInfoNotification` with `{xwa2_notify_new_chat_messages_capping_info_update: {...}}`.
   */
  mexNotification(opName: string, data: unknown): void {
    if (!this.session) throw new Error("no companion is logged in")
    this.send(this.session, {
      tag: "notification",
      attrs: { from: S_WA, type: "mex", id: `mex-${randomBytes(4).toString("hex")}`, t: unixNow() },
      content: [{ tag: "update", attrs: { op_name: opName }, content: Buffer.from(JSON.stringify({ data })) }]
    })
  }

  /**
   * From now on, a client announcing a WhatsApp Web version older than `minimum` is refused as
   * WhatsApp refuses an outdated client (`<failure reason="405"/>`); `undefined` takes any.
   */
  refuseVersionsBelow(minimum: readonly [number, number, number] | undefined): void {
    this.minimumVersion = minimum
  }

  /** The next `times` logins are answered with `<stream:error code=.../>` instead of `<success>`. */
  failNextLogins(code: number, times = Number.POSITIVE_INFINITY): void {
    this.failLogins = { code, remaining: times }
  }

  /**
   * Logins from now on get no `<ib><offline/>` until `releaseOfflineNotice`: Baileys keeps
   * buffering its message events meanwhile (and folds receipts into buffered upserts).
   */
  holdOfflineNotice(): void {
    this.holdOffline = true
  }

  /** Sends the held `<ib><offline/>` to the logged-in session. */
  releaseOfflineNotice(): void {
    this.holdOffline = false
    if (this.session) this.sendOfflineNotice(this.session)
  }

  private sendOfflineNotice(conn: Connection, count = 0) {
    this.send(conn, {
      tag: "ib",
      attrs: { from: S_WA },
      content: [{ tag: "offline", attrs: { count: String(count) } }]
    })
  }

  /** Waits until `predicate` holds, re-checked on every server event. */
  until(predicate: () => boolean): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      const check = () => {
        if (predicate()) {
          this.events.off("changed", check)
          resume(Effect.void)
        }
      }
      this.events.on("changed", check)
      check()
      return Effect.sync(() => this.events.off("changed", check))
    })
  }

  // ------------------------------------------------------------------ groups (FakeGroups)

  /** @internal — what a `FakeGroup` needs of the server */
  private readonly groupLine: GroupLine = {
    notify: (node) => this.toCompanionOrQueue(node),
    us: () => this.phone
  }

  private readonly groups = new Map<string, FakeGroup>()

  /**
   * A group chat the account's number is in (unless `withoutUs`), with `members` (fake contacts):
   * the linked device finds it in its group list and metadata queries, members write in it
   * (`says(text, { group })`), and what the device sends to it reaches every member.
   */
  group(options: GroupOptions): FakeGroup {
    const group = new FakeGroup(this.groupLine, options)
    this.groups.set(group.jid, group)
    return group
  }

  /** The group `chat: "group"` without a `group` writes in: one per server, the contact made a member. */
  private defaultGroup(contact: FakeContact): FakeGroup {
    const jid = "120363025246125486@g.us"
    const group = this.groups.get(jid) ?? this.group({ subject: "Fake group", members: [], id: "120363025246125486" })
    if (!group.members.has(contact.user)) group.members.set(contact.user, { who: contact, role: "member" })
    return group
  }

  /** `w:g2` `<query>` of one group (Baileys `groupMetadata`): 404 unknown, 403 once our number left it. */
  private groupQuery(conn: Connection, node: BinaryNode) {
    const group = this.groups.get(node.attrs["to"] ?? "")
    const refusal = !group
      ? { code: "404", text: "item-not-found" }
      : !group.includesUs
      ? { code: "403", text: "forbidden" }
      : undefined
    if (refusal || !group) {
      return this.send(conn, {
        tag: "iq",
        attrs: { from: node.attrs["to"] ?? "@g.us", type: "error", id: node.attrs["id"] ?? "" },
        content: [{ tag: "error", attrs: refusal ?? { code: "404", text: "item-not-found" } }]
      })
    }
    this.groupQueries.push(group.jid)
    this.changed()
    return this.result(conn, node, [group.metadataNode()])
  }

  /** metadata queries the device made, by group jid (one entry per query) */
  readonly groupQueries: Array<string> = []

  /** `w:g2` `<participating>` (Baileys `groupFetchAllParticipating`): the groups our number is in. */
  private groupsParticipating(conn: Connection, node: BinaryNode) {
    const mine = [...this.groups.values()].filter((g) => g.includesUs)
    return this.result(conn, node, [{ tag: "groups", attrs: {}, content: mine.map((g) => g.metadataNode()) }])
  }

  /**
   * A message from the device to a group: the sender key it distributes (`pkmsg`/`msg` to each
   * member device that has not had it), then the `skmsg` every member decrypts with it; each member
   * answers with a delivered and a read receipt (`autoReceipts`), as WhatsApp relays them:
   * `<receipt from=group participant=member>`. A group our number is not in, or one where only
   * admins write and our number is not one, refuses it (the ack carries error 403).
   */
  private async onGroupMessage(conn: Connection, node: BinaryNode) {
    const id = node.attrs["id"] ?? ""
    const to = node.attrs["to"] ?? ""
    const group = this.groups.get(to)
    const ourRole = group?.members.get(this.phone.user)?.role
    const refused = !group
      ? "404"
      : ourRole === undefined
      ? "403"
      : group.announceOnly && ourRole === "member"
      ? "403"
      : undefined
    if (refused !== undefined) {
      this.send(conn, { tag: "ack", attrs: { class: "message", id, from: to, t: unixNow(), error: refused } })
      group?.refused.push(id)
      this.changed()
      return
    }
    this.send(conn, { tag: "ack", attrs: { class: "message", id, from: to, t: unixNow() } })
    const device = conn.device
    if (!group || !device) return
    for (const toNode of getBinaryNodeChildren(getBinaryNodeChild(node, "participants"), "to")) {
      const enc = getBinaryNodeChild(toNode, "enc")
      const contact = this.findPeer(toNode.attrs["jid"] ?? "")?.contact
      if (!enc || !contact) continue
      const message = await contact.peer.decrypt(device, enc).catch((error: unknown) => {
        contact.undelivered.push({ id, reason: `the sender key did not decrypt (${enc.attrs["type"]}): ${error}` })
        return undefined
      })
      const distribution = message?.senderKeyDistributionMessage?.axolotlSenderKeyDistributionMessage
      if (distribution) await group.receiveSenderKey(contact.user, device.device, distribution)
    }
    const skmsg = getBinaryNodeChildren(node, "enc").find((e) => e.attrs["type"] === "skmsg")
    if (!(skmsg?.content instanceof Uint8Array)) return
    for (const { who } of group.members.values()) {
      const contact = this.contacts.get(who.user)
      if (!contact) continue
      contact.chat.push({ stanza: "message", id, at: Date.now() })
      const message = await group.decryptFromCompanion(contact.user, device.device, skmsg.content).catch(
        (error: unknown) => {
          contact.undelivered.push({ id, reason: `the member could not decrypt the group message: ${error}` })
          return undefined
        }
      )
      if (!message) continue
      contact.stanzaIds.push(id)
      const text = message.conversation ?? message.extendedTextMessage?.text ?? undefined
      if (!contact.received.some((m) => m.id === id)) {
        contact.received.push({ id, to, text, kind: decodeReceived(message), quotedId: quotedIdOf(message), message })
      }
      group.received.push({ id, member: contact.user, message, text })
      const receipt = (type: "delivered" | "read") => {
        this.toCompanionOrQueue({
          tag: "receipt",
          attrs: { id, from: to, participant: group.jidOf(contact), t: unixNow(), ...(type === "read" ? { type } : {}) }
        })
        group.receiptsSent.push({ id, member: contact.user, type })
        this.changed()
      }
      if (group.autoReceipts.delivered) setTimeout(() => receipt("delivered"), 20)
      if (group.autoReceipts.read) setTimeout(() => receipt("read"), 150)
    }
    this.events.emit("received")
    this.changed()
  }

  // ------------------------------------------------------------------ connections

  private onConnection(ws: WebSocket) {
    const conn: Connection = {
      ws,
      noise: new NoiseResponder(this.staticKey, this.certChain),
      stage: "hello",
      refs: [],
      pending: new Map(),
      seq: 0,
      openedAt: Date.now()
    }
    this.connections.add(conn)
    this.stats.connections++
    this.changed()
    ws.on("close", () => {
      this.connections.delete(conn)
      for (const ref of conn.refs) this.pairingByRef.delete(ref)
      if (this.session === conn) this.session = undefined
      this.changed()
    })
    ws.on("message", (data: Buffer) => {
      this.onBytes(conn, data).catch((error) => {
        this.serverErrors.push(String(error))
        this.events.emit("server-error", error)
        ws.terminate()
      })
    })
  }

  private async onBytes(conn: Connection, data: Buffer) {
    for (const frame of conn.noise.push(data)) {
      if (conn.stage === "hello") {
        conn.ws.send(conn.noise.onClientHello(frame))
        conn.stage = "finish"
      } else if (conn.stage === "finish") {
        const payload = conn.noise.onClientFinish(frame)
        conn.stage = "open"
        const v = payload.userAgent?.appVersion
        this.clientVersions.push(`${v?.primary}.${v?.secondary}.${v?.tertiary}`)
        if (
          this.minimumVersion && isOlder([v?.primary ?? 0, v?.secondary ?? 0, v?.tertiary ?? 0], this.minimumVersion)
        ) {
          // as WhatsApp answers an outdated web client
          this.send(conn, { tag: "failure", attrs: { reason: "405", location: "fake" } })
          this.changed()
          continue
        }
        if (payload.devicePairingData) this.startPairing(conn, payload.devicePairingData)
        else this.login(conn, payload)
      } else {
        const node = await conn.noise.decode(frame)
        if (this.options.trace) console.log("<<", JSON.stringify(node.attrs), node.tag)
        await this.dispatch(conn, node)
      }
    }
  }

  private send(conn: Connection, node: BinaryNode) {
    if (this.options.trace) console.log(">>", node.tag, JSON.stringify(node.attrs))
    if (conn.ws.readyState === conn.ws.OPEN) conn.ws.send(conn.noise.encode(node))
  }

  /** An IQ from the server; resolves with the client's result. */
  private query(conn: Connection, node: BinaryNode): Promise<BinaryNode> {
    const id = `srv-${++conn.seq}`
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to server query ${id}`)), 10_000)
      conn.pending.set(id, (answer) => {
        clearTimeout(timer)
        resolve(answer)
      })
      this.send(conn, { ...node, attrs: { ...node.attrs, id } })
    })
  }

  private changed() {
    this.events.emit("changed")
  }

  // ------------------------------------------------------------------ pairing

  private startPairing(conn: Connection, data: proto.ClientPayload.IDevicePairingRegistrationData) {
    if (!data.eIdent || !data.eRegid) throw new Error("registration without identity")
    conn.registration = {
      identityKey: Buffer.from(data.eIdent),
      noiseKey: conn.noise.clientStatic,
      registrationId: Buffer.from(data.eRegid).readUInt32BE(0)
    }
    conn.refs = Array.from({ length: this.options.refs ?? 6 }, () => `2@${randomBytes(32).toString("base64")}`)
    for (const ref of conn.refs) this.pairingByRef.set(ref, conn)
    this.send(conn, {
      tag: "iq",
      attrs: { from: S_WA, type: "set", id: `pd-${randomBytes(4).toString("hex")}`, xmlns: "md" },
      content: [{
        tag: "pair-device",
        attrs: {},
        content: conn.refs.map((r) => ({ tag: "ref", attrs: {}, content: Buffer.from(r) }))
      }]
    })
  }

  /**
   * @internal — `FakePhone.scan`. QR (7.x):
   * `https://wa.me/settings/linked_devices#<ref>,<noise pub b64>,<identity pub b64>,<advSecret b64>,<platform>`
   */
  async scan(qr: string): Promise<void> {
    const [ref, noiseB64, identityB64, advB64] = qr.slice(qr.indexOf("#") + 1).split(",")
    const conn = ref === undefined ? undefined : this.pairingByRef.get(ref)
    if (!conn?.registration || !noiseB64 || !identityB64 || !advB64) throw new Error("unknown or expired QR")
    const identityKey = Buffer.from(identityB64, "base64")
    if (!identityKey.equals(conn.registration.identityKey)) throw new Error("QR identity key mismatch")
    if (!Buffer.from(noiseB64, "base64").equals(conn.registration.noiseKey)) throw new Error("QR noise key mismatch")

    await this.completePairing(conn, identityKey, Buffer.from(advB64, "base64"))
  }

  /**
   * The phone accepted the companion (a scanned QR, a typed code): `pair-success` with the device
   * identity signed by the account and HMAC'd with the ADV secret, the companion's signature
   * checked, then the 515 restart.
   */
  private async completePairing(conn: Connection, identityKey: Buffer, advSecret: Buffer): Promise<void> {
    if (!conn.registration) throw new Error("no registration on this connection")
    // taken before any await: scans under way at once get devices of their own
    const device = this.options.manyCompanions === true ? 7 + this.companionsLinked++ : 7
    const accountKey = this.phone.accountKey
    const details = proto.ADVDeviceIdentity.encode({ rawId: 424242, timestamp: Number(unixNow()), keyIndex: 1 })
      .finish()
    const accountSignature = Curve.sign(accountKey.private, Buffer.concat([Buffer.from([6, 0]), details, identityKey]))
    const signed = proto.ADVSignedDeviceIdentity.encode({
      details,
      accountSignatureKey: accountKey.public,
      accountSignature
    }).finish()
    const hmac = createHmac("sha256", advSecret).update(signed).digest()
    const jid = `${this.phone.user}:${device}@${S_WA}`
    const lid = `${this.phone.lidUser}:${device}@lid`
    const answer = await this.query(conn, {
      tag: "iq",
      attrs: { from: S_WA, type: "set", t: unixNow() },
      content: [{
        tag: "pair-success",
        attrs: {},
        content: [
          {
            tag: "device-identity",
            attrs: {},
            content: proto.ADVSignedDeviceIdentityHMAC.encode({ details: signed, hmac }).finish()
          },
          { tag: "platform", attrs: { name: "smba" } },
          { tag: "device", attrs: { jid, lid } }
        ]
      }]
    })
    // the companion answers <pair-device-sign><device-identity> signed with its identity key
    const signNode = getBinaryNodeChild(getBinaryNodeChild(answer, "pair-device-sign"), "device-identity")
    if (!(signNode?.content instanceof Uint8Array)) throw new Error("no pair-device-sign from the companion")
    const account = proto.ADVSignedDeviceIdentity.decode(signNode.content)
    const signedByDevice = Buffer.concat([Buffer.from([6, 1]), details, identityKey, accountKey.public])
    if (!account.deviceSignature || !Curve.verify(identityKey, signedByDevice, account.deviceSignature)) {
      throw new Error("bad device signature from the companion")
    }
    this.devices.set(`${this.phone.user}:${device}`, {
      jid,
      lid,
      device,
      noiseKey: conn.registration.noiseKey,
      identityKey,
      registrationId: conn.registration.registrationId,
      signedPreKey: undefined,
      preKeys: []
    })
    for (const r of conn.refs) this.pairingByRef.delete(r)
    conn.codePairing = undefined
    this.stats.pairings++
    this.changed()
    // the real server makes the companion reconnect and log in with its new creds
    this.send(conn, { tag: "stream:error", attrs: { code: "515" } })
    setTimeout(() => conn.ws.close(), 50)
  }

  /**
   * `link_code_companion_reg` from the companion: `companion_hello` asks for a code pairing of a
   * number (refused with 400 `bad-request`, as WhatsApp refuses it, when the number is not the
   * account's), `companion_finish` completes the phone's attempt (`typeCode`).
   */
  private onLinkCode(conn: Connection, node: BinaryNode) {
    const reg = getBinaryNodeChild(node, "link_code_companion_reg")
    if (reg?.attrs["stage"] === "companion_hello") {
      const hello = FakeCodePairing.readHello(node)
      this.codeRequests.push(hello.user)
      const valid = conn.registration !== undefined && hello.noiseKey.equals(conn.registration.noiseKey) &&
        hello.user === this.phone.user
      if (!valid) {
        this.send(conn, {
          tag: "iq",
          attrs: { from: S_WA, type: "error", id: node.attrs["id"] ?? "" },
          content: [{ tag: "error", attrs: { code: "400", text: "bad-request" } }]
        })
        this.changed()
        return
      }
      conn.codePairing = { hello }
      this.result(conn, node, [{
        tag: "link_code_companion_reg",
        attrs: {},
        content: [{ tag: "link_code_pairing_ref", attrs: {}, content: hello.ref }]
      }])
      this.changed()
      return
    }
    const attempt = conn.codePairing?.attempt
    if (reg?.attrs["stage"] !== "companion_finish" || !conn.codePairing || !attempt || !conn.registration) {
      return this.send(conn, {
        tag: "iq",
        attrs: { from: S_WA, type: "error", id: node.attrs["id"] ?? "" },
        content: [{ tag: "error", attrs: { code: "400", text: "bad-request" } }]
      })
    }
    conn.codePairing.attempt = undefined
    const opened = FakeCodePairing.openFinish(node, {
      ref: conn.codePairing.hello.ref,
      ephemeralSecret: attempt.ephemeralSecret,
      identity: this.phone.accountKey,
      companionIdentity: conn.registration.identityKey
    })
    if (!opened.ok) {
      this.send(conn, {
        tag: "iq",
        attrs: { from: S_WA, type: "error", id: node.attrs["id"] ?? "" },
        content: [{ tag: "error", attrs: { code: "400", text: "bad-request" } }]
      })
      this.serverErrors.push(`code pairing refused: ${opened.reason}`)
      attempt.done("refused")
      return
    }
    this.result(conn, node)
    // not awaited here: the companion's answer to pair-success arrives as a later frame
    this.completePairing(conn, conn.registration.identityKey, opened.advSecret).then(
      () => attempt.done("linked"),
      (error) => {
        this.serverErrors.push(String(error))
        attempt.done("refused")
      }
    )
  }

  /**
   * @internal — `FakePhone.typesCode`: the phone answers the newest code pairing with what was typed.
   * As on a real phone, the code can only be typed once WhatsApp heard the companion ask for it: the
   * companion shows its code before its request arrives (Baileys does not wait for the answer), so a
   * code typed the moment it shows waits for the request (up to 30 s) instead of finding none.
   */
  async typeCode(code: string): Promise<CodeOutcome> {
    const pending = () => [...this.connections].reverse().find((c) => c.codePairing && c.ws.readyState === c.ws.OPEN)
    const deadline = Date.now() + 30_000
    let conn = pending()
    while (conn?.codePairing === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      conn = pending()
    }
    if (!conn?.codePairing) throw new Error("no companion asked for a pairing code")
    const { ephemeralSecret, notification } = FakeCodePairing.primaryAnswer(
      conn.codePairing.hello,
      code,
      this.phone.accountKey
    )
    return new Promise<CodeOutcome>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the companion never sent companion_finish")), 30_000)
      conn.codePairing!.attempt = {
        ephemeralSecret,
        done: (outcome) => {
          clearTimeout(timer)
          resolve(outcome)
        }
      }
      this.send(conn, notification)
    })
  }

  // ------------------------------------------------------------------ login

  private login(conn: Connection, payload: proto.ClientPayload) {
    if (this.heldLogins) {
      this.heldLogins.push(() => this.login(conn, payload))
      this.changed()
      return
    }
    const device = this.devices.get(`${payload.username}:${payload.device ?? 0}`)
    if (!device || !device.noiseKey.equals(conn.noise.clientStatic)) {
      this.send(conn, { tag: "failure", attrs: { reason: "401", location: "fake" } })
      return
    }
    this.stats.logins++
    if (this.failLogins && this.failLogins.remaining > 0) {
      this.failLogins.remaining--
      this.send(conn, { tag: "stream:error", attrs: { code: String(this.failLogins.code) } })
      this.changed()
      return
    }
    // the same device logging in twice: the older connection is replaced, as WhatsApp does
    for (const other of this.connections) {
      if (other !== conn && other.device === device && other.ws.readyState === other.ws.OPEN) {
        this.send(other, {
          tag: "stream:error",
          attrs: {},
          content: [{ tag: "conflict", attrs: { type: "replaced" } }]
        })
        setTimeout(() => other.ws.close(), 20)
      }
    }
    conn.device = device
    this.session = conn
    this.send(conn, {
      tag: "success",
      attrs: { t: unixNow(), lid: device.lid, props: "1", abprops: "1", location: "fake", creation: unixNow() }
    })
    setTimeout(() => this.deliverOffline(conn, 0), 50)
    this.changed()
  }

  /**
   * What came while the companion was away, in order, then the notice that the offline queue is
   * drained (Baileys buffers its events until then). A status broadcast waits for the companion's
   * ack, as WhatsApp's server does: acked, the rest follows; refused (an ack with `error`), it stays
   * pending, comes first again at the next login, and everything after it is held back meanwhile
   * (Baileys PR 2779: one undecryptable status froze an account's offline delivery).
   */
  private deliverOffline(conn: Connection, delivered: number) {
    if (this.session !== conn) return
    while (this.offlineQueue.length > 0) {
      const node = this.offlineQueue[0]!
      this.send(conn, node)
      if (node.attrs["from"] === "status@broadcast") {
        this.pendingStatus = { conn, id: node.attrs["id"] ?? "", delivered: delivered + 1 }
        return
      }
      this.offlineQueue.shift()
      delivered++
    }
    if (!this.holdOffline) this.sendOfflineNotice(conn, delivered)
  }

  /** The companion's `<ack class="message">`: one for an offline status lets the rest follow. */
  private onMessageAck(conn: Connection, node: BinaryNode) {
    const { id, error } = node.attrs
    this.messageAcks.push({ id: id ?? "", ...(error === undefined ? {} : { error }) })
    const pending = this.pendingStatus
    if (pending?.conn === conn && pending.id === id) {
      this.pendingStatus = undefined
      if (error === undefined) {
        this.offlineQueue.shift()
        this.deliverOffline(conn, pending.delivered)
      }
    }
    this.changed()
  }

  /** @internal — `FakePhone.unlink` */
  unlinkAll(): void {
    this.devices.clear()
    for (const conn of this.connections) {
      if (conn.device) {
        this.send(conn, {
          tag: "stream:error",
          attrs: { code: "401" },
          content: [{ tag: "conflict", attrs: { type: "device_removed" } }]
        })
      }
    }
    this.changed()
  }

  // ------------------------------------------------------------------ stanzas

  private async dispatch(conn: Connection, node: BinaryNode) {
    const { tag, attrs } = node
    if (tag === "iq" && (attrs["type"] === "result" || attrs["type"] === "error")) {
      const id = attrs["id"] ?? ""
      const resolve = conn.pending.get(id)
      conn.pending.delete(id)
      resolve?.(node)
      return
    }
    if (tag === "iq") return this.onIq(conn, node)
    if (tag === "receipt" && attrs["type"] === "server-error") this.onReuploadRequest(conn, node)
    if (tag === "receipt" && attrs["type"] === "retry") await this.onRetryRequest(attrs["id"] ?? "")
    if (tag === "receipt" && attrs["type"] === "read") this.onReadReceipt(node)
    if (tag === "message") return this.onMessage(conn, node)
    if (tag === "chatstate") return this.onChatState(node)
    if (tag === "ack" && attrs["class"] === "message") return this.onMessageAck(conn, node)
    if (tag === "call") return this.onCall(conn, node)
    if (tag === "receipt" || tag === "notification") {
      this.send(conn, {
        tag: "ack",
        attrs: {
          id: attrs["id"] ?? "",
          class: tag,
          from: attrs["to"] ?? S_WA,
          ...(attrs["type"] ? { type: attrs["type"] } : {})
        }
      })
      this.events.emit(`${tag}-from-client`, node)
    }
    // presence, ib and acks need no answer
  }

  /** The companion's `<call><reject>`: kept, and acked (Baileys' `rejectCall` waits for the ack). */
  private onCall(conn: Connection, node: BinaryNode) {
    const reject = getBinaryNodeChild(node, "reject")
    if (reject) this.callRejects.push({ callId: reject.attrs["call-id"] ?? "", to: node.attrs["to"] ?? "" })
    this.send(conn, {
      tag: "ack",
      attrs: {
        id: node.attrs["id"] ?? "",
        class: "call",
        from: node.attrs["to"] ?? S_WA,
        ...(reject ? { type: "reject" } : {})
      }
    })
    this.changed()
  }

  private result(conn: Connection, node: BinaryNode, content?: Array<BinaryNode>) {
    this.send(conn, {
      tag: "iq",
      attrs: { from: S_WA, type: "result", id: node.attrs["id"] ?? "" },
      ...(content ? { content } : {})
    })
  }

  private onIq(conn: Connection, node: BinaryNode) {
    const child = Array.isArray(node.content) ? node.content[0] : undefined
    switch (`${node.attrs["xmlns"]}/${node.attrs["type"]}/${child?.tag}`) {
      case "md/set/remove-companion-device": {
        for (const [key, device] of this.devices) if (device === conn.device) this.devices.delete(key)
        this.changed()
        return this.result(conn, node)
      }
      case "md/set/link_code_companion_reg":
        return this.onLinkCode(conn, node)
      case "encrypt/get/count":
        return this.result(conn, node, [{ tag: "count", attrs: { value: String(conn.device?.preKeys.length ?? 0) } }])
      case "encrypt/set/undefined":
      case "encrypt/set/registration":
        return this.storePreKeys(conn, node)
      case "encrypt/get/digest":
        return this.result(conn, node, [{ tag: "digest", attrs: {} }])
      case "encrypt/get/key":
        return this.preKeyFetch(conn, node)
      case "usync/get/usync":
        return this.usync(conn, node)
      case "w:g2/get/query":
        return this.groupQuery(conn, node)
      case "w:g2/get/participating":
        return this.groupsParticipating(conn, node)
      case "blocklist/get/undefined":
        return this.result(conn, node, [{ tag: "list", attrs: {} }])
      case "privacy/get/privacy":
        return this.result(conn, node, [{
          tag: "privacy",
          attrs: {},
          content: [
            { tag: "category", attrs: { name: "readreceipts", value: "all" } },
            { tag: "category", attrs: { name: "last", value: "all" } }
          ]
        }])
      case "w:m/set/media_conn":
        return this.result(conn, node, [{
          tag: "media_conn",
          attrs: { auth: "fake-media-auth", ttl: "3600", max_buckets: "12" },
          content: [{ tag: "host", attrs: { hostname: this.media.hostname, maxContentLengthBytes: "104857600" } }]
        }])
      case "abt/get/props":
        return this.result(conn, node, [{ tag: "props", attrs: { protocol: "1", hash: "fake" }, content: [] }])
      default:
        // ping, passive/active, privacy tokens, ...: an empty result is what Baileys needs
        return this.result(conn, node)
    }
  }

  private storePreKeys(conn: Connection, node: BinaryNode) {
    const device = conn.device
    const registration = getBinaryNodeChild(node, "registration")?.content
    const identity = getBinaryNodeChild(node, "identity")?.content
    if (device && registration instanceof Uint8Array && identity instanceof Uint8Array) {
      device.registrationId = Buffer.from(registration).readUInt32BE(0)
      device.identityKey = Buffer.from(identity)
      device.signedPreKey = getBinaryNodeChild(node, "skey")
      device.preKeys.push(...getBinaryNodeChildren(getBinaryNodeChild(node, "list"), "key"))
      this.events.emit("prekeys-uploaded", device.preKeys.length)
    }
    this.result(conn, node)
  }

  /** The companion read a contact's messages: its first id, then the rest listed (`<list><item id>`). */
  private onReadReceipt(node: BinaryNode) {
    const to = node.attrs["to"] ?? ""
    const listed = getBinaryNodeChildren(getBinaryNodeChild(node, "list"), "item").map((item) => item.attrs["id"] ?? "")
    const group = this.groups.get(to)
    if (group) {
      // a group member's message: the receipt names the member who wrote
      const participant = node.attrs["participant"] ?? ""
      for (const id of [node.attrs["id"] ?? "", ...listed]) group.readReceipts.push({ id, participant })
      this.events.emit("changed")
      return
    }
    const contact = this.findPeer(to)?.contact
    if (!contact) return
    for (const id of [node.attrs["id"] ?? "", ...listed]) contact.readReceipts.push({ id, to })
    this.events.emit("read-receipt")
  }

  private findPeer(jid: string): { peer: SignalPeer; contact?: FakeContact } | undefined {
    const decoded = jidDecode(jid)
    if (!decoded) return undefined
    const isLid = decoded.server === "lid"
    if (decoded.user === (isLid ? this.phone.lidUser : this.phone.user)) return { peer: this.phone.peer }
    for (const contact of this.contacts.values()) {
      if (decoded.user === (isLid ? contact.lidUser : contact.user)) return { peer: contact.peer, contact }
    }
    return undefined
  }

  /** usync (context message; devices + lid): device lists and LIDs of the account and contacts. */
  private usync(conn: Connection, node: BinaryNode) {
    const usync = getBinaryNodeChild(node, "usync")
    const queryNode = getBinaryNodeChild(usync, "query")
    const protocols = Array.isArray(queryNode?.content) ? queryNode.content.map((c) => c.tag) : []
    // a user is named by jid, or (a "contact" query: is this number on WhatsApp?) by phone number
    const jidOf = (user: BinaryNode) => {
      const phone = getBinaryNodeChild(user, "contact")?.content
      const text = typeof phone === "string" ? phone : phone instanceof Uint8Array ? Buffer.from(phone).toString() : ""
      return user.attrs["jid"] ?? (text ? `${digits(text)}@${S_WA}` : "")
    }
    const listed = getBinaryNodeChildren(getBinaryNodeChild(usync, "list"), "user")
    if (protocols.includes("contact")) {
      for (const u of listed) this.contactChecks.push(jidDecode(jidOf(u))?.user ?? "")
    }
    const named = listed.map((u) => this.findPeer(jidOf(u))?.contact)
    for (const contact of named) if (contact) contact.lookups++
    const refusal = named.find((contact) => contact?.lookupError !== undefined)?.lookupError
    if (refusal !== undefined) {
      this.changed()
      return this.send(conn, {
        tag: "iq",
        attrs: { from: S_WA, type: "error", id: node.attrs["id"] ?? "" },
        content: [{ tag: "error", attrs: { code: refusal.code, text: refusal.text } }]
      })
    }
    const users = getBinaryNodeChildren(getBinaryNodeChild(usync, "list"), "user").map((user): BinaryNode => {
      const jid = jidOf(user)
      const found = this.findPeer(jid)
      const isMe = found !== undefined && found.contact === undefined
      const content: Array<BinaryNode> = []
      if (protocols.includes("devices")) {
        const ids = isMe ? [0, conn.device?.device ?? 0] : found ? [0] : []
        content.push({
          tag: "devices",
          attrs: {},
          content: [{
            tag: "device-list",
            attrs: {},
            content: ids.map((id) => ({
              tag: "device",
              attrs: { id: String(id), ...(id ? { "key-index": "1" } : {}) }
            }))
          }]
        })
      }
      if (protocols.includes("lid") && found) {
        content.push({
          tag: "lid",
          attrs: { val: `${found.contact ? found.contact.lidUser : this.phone.lidUser}@lid` }
        })
      }
      if (protocols.includes("contact")) content.push({ tag: "contact", attrs: { type: found ? "in" : "out" } })
      return { tag: "user", attrs: { jid }, content }
    })
    this.result(conn, node, [{
      tag: "usync",
      attrs: { sid: usync?.attrs["sid"] ?? "", index: "0", last: "true" },
      content: [
        { tag: "result", attrs: {}, content: protocols.map((t) => ({ tag: t, attrs: {} })) },
        { tag: "list", attrs: {}, content: users }
      ]
    }])
  }

  private preKeyFetch(conn: Connection, node: BinaryNode) {
    const users = getBinaryNodeChildren(getBinaryNodeChild(node, "key"), "user").map((user): BinaryNode => {
      const jid = user.attrs["jid"] ?? ""
      const found = this.findPeer(jid)
      return found
        ? { tag: "user", attrs: { jid }, content: found.peer.bundle() }
        : { tag: "user", attrs: { jid }, content: [{ tag: "error", attrs: { code: "404", text: "item-not-found" } }] }
    })
    this.result(conn, node, [{ tag: "list", attrs: {}, content: users }])
  }

  /** "typing..." from Baileys (`<chatstate to=...><composing/></chatstate>`): shown in the contact's chat. */
  private onChatState(node: BinaryNode) {
    const contact = this.findPeer(node.attrs["to"] ?? "")?.contact
    const state = Array.isArray(node.content) ? node.content[0]?.tag : undefined
    if (!contact || (state !== "composing" && state !== "paused")) return
    contact.chat.push({ stanza: state, at: Date.now() })
    this.changed()
  }

  /** A message from Baileys: ack it, let the contact decrypt it, then delivered and read receipts. */
  private async onMessage(conn: Connection, node: BinaryNode) {
    const id = node.attrs["id"] ?? ""
    const to = node.attrs["to"] ?? ""
    if (to.endsWith("@g.us")) return this.onGroupMessage(conn, node)
    const target = this.findPeer(to)
    const contact = target?.contact
    contact?.chat.push({ stanza: "message", id, at: Date.now() })
    if (contact?.silent) return
    if (contact?.ackError !== undefined) {
      this.send(conn, { tag: "ack", attrs: { class: "message", id, from: to, t: unixNow(), error: contact.ackError } })
      contact.refused.push(id)
      this.changed()
      return
    }
    this.send(conn, { tag: "ack", attrs: { class: "message", id, from: to, t: unixNow() } })
    const device = conn.device
    if (target && !contact && device && node.attrs["category"] === "peer") return this.onPeerMessage(conn, device, node)
    if (contact && !device) contact.undelivered.push({ id, reason: "it came on a connection with no logged-in device" })
    if (!contact || !device) return
    const encs: Array<[string, BinaryNode]> = []
    for (const toNode of getBinaryNodeChildren(getBinaryNodeChild(node, "participants"), "to")) {
      const enc = getBinaryNodeChild(toNode, "enc")
      if (enc) encs.push([toNode.attrs["jid"] ?? "", enc])
    }
    for (const enc of getBinaryNodeChildren(node, "enc")) encs.push([to, enc])
    const mine = encs.filter(([jid]) => this.findPeer(jid)?.contact === contact)
    if (mine.length === 0) {
      const addressed = encs.map(([jid]) => jid).join(", ")
      contact.undelivered.push({ id, reason: `no <enc> for the contact (addressed to: ${addressed || "nobody"})` })
      this.changed()
    }
    // the fan-out to the account's own other devices is not for this contact
    for (const [, enc] of mine) {
      const message = await (contact.decryptFailures > 0
        ? Promise.reject(new Error(`a lost session (failDecrypts, ${contact.decryptFailures--} left)`))
        : contact.peer.decrypt(device, enc)).catch((error: unknown) => {
          contact.undelivered.push({ id, reason: `the contact could not decrypt it (${enc.attrs["type"]}): ${error}` })
          this.changed()
          return undefined
        })
      if (message === undefined) {
        // as the phone does: a retry receipt with fresh keys, at most twice per message
        if (contact.retryReceipts.filter((r) => r === id).length < 2) {
          contact.retryReceipts.push(id)
          const count = contact.retryReceipts.filter((r) => r === id).length
          this.send(conn, {
            tag: "receipt",
            attrs: { id, type: "retry", from: to, t: unixNow() },
            content: [
              {
                tag: "retry",
                attrs: { count: String(count), id, t: node.attrs["t"] ?? unixNow(), v: "1", error: "0" }
              },
              ...contact.peer.retryReceiptContent()
            ]
          })
        }
        return
      }
      contact.stanzaIds.push(id)
      if (!contact.received.some((m) => m.id === id)) {
        contact.received.push({
          id,
          to,
          text: message.conversation ?? message.extendedTextMessage?.text ?? undefined,
          kind: decodeReceived(message),
          quotedId: quotedIdOf(message),
          message
        })
      }
      this.events.emit("received")
      this.changed()
    }
    const receipt = (type: "delivered" | "read") => {
      // to the companion's session as it is then: the one that sent the message may have closed
      // meanwhile (a reconnect), and WhatsApp keeps a receipt for the device's next login
      this.toCompanionOrQueue({
        tag: "receipt",
        attrs: { id, from: to, t: unixNow(), ...(type === "read" ? { type } : {}) }
      })
      contact.receiptsSent.push({ id, type })
      this.changed()
    }
    if (contact.autoReceipts.delivered) setTimeout(() => receipt("delivered"), 20)
    if (contact.autoReceipts.read) setTimeout(() => receipt("read"), 150)
  }

  /** @internal — `FakeContact.sends` */
  async pushMessage(contact: FakeContact, message: proto.IMessage, options: SendOptions): Promise<string> {
    const device = this.session?.device ?? [...this.devices.values()][0]
    if (!device) throw new Error("no companion is linked")
    const group = options.group ?? (options.chat === "group" ? this.defaultGroup(contact) : undefined)
    if (group) {
      // as WhatsApp's apps send to a group: the message under the member's sender key (`skmsg`),
      // and the first time this device hears from the member, that key in a pkmsg/msg to the device
      const { distribution, skmsg } = await group.encryptFrom(contact, device.device, message)
      const encs: Array<BinaryNode> = []
      if (distribution) {
        const { type, ciphertext } = await contact.peer.encrypt(device, distribution)
        encs.push({ tag: "enc", attrs: { v: "2", type }, content: ciphertext })
      }
      encs.push({
        tag: "enc",
        attrs: { v: "2", type: "skmsg" },
        content: options.garbled === true ? garble(skmsg) : skmsg
      })
      const id = options.id ?? `3EB0${randomBytes(8).toString("hex").toUpperCase()}`
      this.sentByContacts.set(id, { contact, message, options: { ...options, group } })
      group.delivered.push({ id, encs: encs.map((e) => e.attrs["type"] ?? "") })
      return this.deliver(contact, id, message, { ...options, chat: "group", group }, encs)
    }
    const encrypted = await contact.peer.encrypt(device, message)
    const { type } = encrypted
    const ciphertext = options.garbled === true ? garble(encrypted.ciphertext) : encrypted.ciphertext
    const id = options.id ?? `3EB0${randomBytes(8).toString("hex").toUpperCase()}`
    this.sentByContacts.set(id, { contact, message, options })
    return this.deliver(contact, id, message, options, [{ tag: "enc", attrs: { v: "2", type }, content: ciphertext }])
  }

  /** @internal — `FakeContact.sendsViewOnce`, `sendsWithoutContent`: a message stanza without `<enc>` */
  async pushMarker(
    contact: FakeContact,
    children: Array<BinaryNode>,
    options: SendOptions,
    message?: proto.IMessage
  ): Promise<string> {
    const id = options.id ?? `3EB0${randomBytes(8).toString("hex").toUpperCase()}`
    if (message) this.withoutContent.set(id, { contact, message, options })
    return this.deliver(contact, id, { imageMessage: {} }, options, children)
  }

  private deliver(
    contact: FakeContact,
    id: string,
    message: proto.IMessage,
    options: SendOptions,
    children: Array<BinaryNode>
  ): string {
    const pn = `${contact.user}@${S_WA}`
    const lid = `${contact.lidUser}@lid`
    const addressing = options.addressing ?? (options.group?.addressing === "lid" ? "lid+pn" : "pn")
    const sender = addressing.startsWith("lid") ? lid : pn
    const alt: Record<string, string> = addressing === "lid+pn"
      ? { sender_pn: pn }
      : addressing === "pn+lid"
      ? { sender_lid: lid }
      : {}
    const chat = options.chat ?? "direct"
    const where: Record<string, string> = chat === "direct"
      ? { from: sender, ...alt }
      : chat === "group"
      ? {
        from: (options.group ?? this.defaultGroup(contact)).jid,
        participant: sender,
        ...(alt["sender_pn"] ? { participant_pn: pn } : alt["sender_lid"] ? { participant_lid: lid } : {})
      }
      : {
        from: "status@broadcast",
        participant: sender,
        ...(alt["sender_pn"] ? { participant_pn: pn } : alt["sender_lid"] ? { participant_lid: lid } : {})
      }
    const node: BinaryNode = {
      tag: "message",
      attrs: {
        ...where,
        id,
        t: unixNow(),
        type: message.conversation || message.extendedTextMessage ? "text" : "media",
        notify: "Fake Contact",
        ...(addressing.startsWith("lid") ? { addressing_mode: "lid" } : {}),
        ...(options.offline === undefined ? {} : { offline: options.offline })
      },
      content: children
    }
    const conn = this.session
    if (conn && this.companionOnline) this.send(conn, node)
    else this.offlineQueue.push({ ...node, attrs: { ...node.attrs, offline: "1" } })
    return id
  }

  /**
   * The companion could not decrypt a contact's message and asks for it again, as WhatsApp's apps
   * do: the contact starts a new session (a fresh prekey) and sends it again under the same id.
   */
  private async onRetryRequest(id: string) {
    this.retryRequests.push(id)
    const sent = this.sentByContacts.get(id)
    const device = this.session?.device
    if (!sent || !device || this.retryRequests.filter((r) => r === id).length > 2) return
    const resend = async () => {
      sent.contact.peer.forget(device)
      // a group message comes again with the member's sender key, as the apps resend it
      sent.options.group?.redistribute(sent.contact, device.device)
      await this.pushMessage(sent.contact, sent.message, { ...sent.options, id, garbled: false })
    }
    if (this.heldResends) this.heldResends.push(resend)
    else await resend()
  }

  /**
   * A message from the device to its own phone (`category="peer"`): the phone answers a placeholder
   * resend request for a message it delivered without content (`sendsWithoutContent`) with that
   * message, as a peer data operation response (Baileys emits it as `messages.upsert`).
   */
  private async onPeerMessage(conn: Connection, device: LinkedDevice, node: BinaryNode) {
    const enc = getBinaryNodeChild(node, "enc")
    if (!enc) return
    const decrypted = await this.phone.peer.decrypt(device, enc)
    const request = (decrypted.deviceSentMessage?.message ?? decrypted).protocolMessage
      ?.peerDataOperationRequestMessage
    for (const wanted of request?.placeholderMessageResendRequest ?? []) {
      const id = wanted.messageKey?.id ?? ""
      this.placeholderRequests.push(id)
      this.changed()
      const pending = this.withoutContent.get(id)
      if (!pending) continue
      const answer = async () => {
        const info = proto.WebMessageInfo.encode({
          key: { remoteJid: `${pending.contact.user}@${S_WA}`, fromMe: false, id },
          message: pending.message,
          messageTimestamp: Number(unixNow())
        }).finish()
        // a fresh session (pkmsg), as the companion may not have stored its own yet
        this.phone.peer.forget(device)
        const { type, ciphertext } = await this.phone.peer.encrypt(device, {
          protocolMessage: {
            type: proto.Message.ProtocolMessage.Type.PEER_DATA_OPERATION_REQUEST_RESPONSE_MESSAGE,
            peerDataOperationRequestResponseMessage: {
              peerDataOperationRequestType: proto.Message.PeerDataOperationRequestType.PLACEHOLDER_MESSAGE_RESEND,
              stanzaId: node.attrs["id"] ?? "",
              peerDataOperationResult: [{ placeholderMessageResendResponse: { webMessageInfoBytes: info } }]
            }
          }
        })
        this.send(conn, {
          tag: "message",
          attrs: {
            from: `${this.phone.user}@${S_WA}`,
            id: `3EB0${randomBytes(8).toString("hex").toUpperCase()}`,
            t: unixNow(),
            type: "text",
            category: "peer"
          },
          content: [{ tag: "enc", attrs: { v: "2", type }, content: ciphertext }]
        })
      }
      if (this.heldResends) this.heldResends.push(answer)
      else await answer()
    }
  }

  /** Placeholder resend requests the phone got (message ids), one entry per request. */
  readonly placeholderRequests: Array<string> = []

  /**
   * From now on, what the device asks to be sent again (a retry receipt, a placeholder resend
   * request to the phone) is held until `releaseResends`: a test sees the message before its content.
   */
  holdResends(): void {
    this.heldResends ??= []
  }

  /** Answers the held requests, and the next ones at once. */
  releaseResends(): Effect.Effect<void> {
    return Effect.promise(async () => {
      const held = this.heldResends ?? []
      this.heldResends = undefined
      for (const resend of held) await resend()
    })
  }

  /** @internal — `FakeContact.acknowledges`: to the logged-in companion, or kept for its next login */
  sendReceipt(contact: FakeContact, id: string, type: "delivered" | "read"): void {
    if (this.devices.size === 0) throw new Error("no companion is linked")
    const from = `${contact.user}@${S_WA}`
    this.toCompanionOrQueue({ tag: "receipt", attrs: { id, from, t: unixNow(), ...(type === "read" ? { type } : {}) } })
    contact.receiptsSent.push({ id, type })
    this.changed()
  }

  /**
   * A stanza for the companion: sent to its session when one is logged in, otherwise kept and
   * delivered (marked `offline`) at its next login, as WhatsApp holds messages and receipts for a
   * device that is away.
   */
  private toCompanionOrQueue(node: BinaryNode): void {
    const conn = this.session
    if (conn && this.companionOnline) this.send(conn, node)
    else this.offlineQueue.push({ ...node, attrs: { ...node.attrs, offline: "1" } })
  }

  /** @internal — `FakeContact.revealsNumber` */
  notifyLinkedProfile(contact: FakeContact): void {
    const conn = this.session
    if (!conn || !this.companionOnline) throw new Error("no companion is logged in")
    const payload = {
      data: {
        xwa2_notify_linked_profiles: { jid: `${contact.lidUser}@lid`, added_profiles: [`${contact.user}@${S_WA}`] }
      }
    }
    this.send(conn, {
      tag: "notification",
      attrs: { from: S_WA, type: "mex", id: `mex-${randomBytes(4).toString("hex")}`, t: unixNow() },
      content: [{
        tag: "update",
        attrs: { op_name: "NotificationLinkedProfilesUpdates" },
        content: Buffer.from(JSON.stringify(payload))
      }]
    })
  }

  /** Messages held for the companion while it is away. */
  get heldOffline(): number {
    return this.offlineQueue.length
  }

  /**
   * The companion asks the phone to upload a media again (the host answered 404/410): the phone
   * uploads the same file again and answers with its new direct path, encrypted with the media's
   * retry key as WhatsApp does (`messages.media-update` in Baileys).
   */
  private onReuploadRequest(conn: Connection, node: BinaryNode) {
    const id = node.attrs["id"] ?? ""
    this.reuploadRequests.push(id)
    const rmr = getBinaryNodeChild(node, "rmr")
    const media = this.published.get(id)
    const directPath = media ? this.media.reupload(media.directPath) : undefined
    const rmrNode: BinaryNode = { tag: "rmr", attrs: { ...rmr?.attrs } }
    if (!media || !directPath) {
      this.send(conn, {
        tag: "notification",
        attrs: { from: S_WA, type: "mediaretry", id, t: unixNow() },
        content: [rmrNode, { tag: "error", attrs: { code: "2" } }]
      })
      return
    }
    const retryKey = hkdf(media.mediaKey, 32, { info: "WhatsApp Media Retry Notification" })
    const iv = randomBytes(12)
    const plaintext = proto.MediaRetryNotification.encode({
      stanzaId: id,
      directPath,
      result: proto.MediaRetryNotification.ResultType.SUCCESS
    }).finish()
    const ciphertext = aesEncryptGCM(plaintext, retryKey, iv, Buffer.from(id))
    this.send(conn, {
      tag: "notification",
      attrs: { from: S_WA, type: "mediaretry", id, t: unixNow() },
      content: [
        {
          tag: "encrypt",
          attrs: {},
          content: [{ tag: "enc_p", attrs: {}, content: ciphertext }, {
            tag: "enc_iv",
            attrs: {},
            content: iv
          }]
        },
        rmrNode
      ]
    })
    this.changed()
  }
}
