/**
 * The mutual proof of `CLUSTER_SECRET` that opens every cluster connection, run on the raw TCP
 * socket before any cluster message is written or read (docs/CONFIGURATION.md "The cluster
 * port"). A challenge-response in three fixed-size messages:
 *
 * 1. runner -> caller: `MAGIC` + a fresh 32-byte server nonce;
 * 2. caller -> runner: `MAGIC` + a fresh 32-byte client nonce + HMAC-SHA256(first secret,
 *    "client" label, both nonces). The runner reads the 8 bytes of `MAGIC` first and closes at once
 *    on anything else (a stranger, or a node of a version without the handshake); then it checks
 *    the proof against each of its secrets, in constant time;
 * 3. runner -> caller: HMAC-SHA256(the secret that matched, "server" label, both nonces). The caller
 *    checks it against each of its own secrets, so it talks cluster only to a runner that holds one.
 *
 * Fresh nonces on both sides make a recorded proof useless on another connection; the labels
 * keep a proof of one side from being replayed as the other's. The proof authenticates the peer
 * when the connection opens; it does not encrypt the stream, so the port stays on a private
 * network (docs/OPERATING.md "The cluster port").
 */
import { Data, Duration, Effect } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import type { Socket } from "node:net"

/** "Switchboard cluster, handshake version 1": what a peer says first. */
export const MAGIC: Buffer = Buffer.from("SWBCLU01", "ascii")
export const NONCE_BYTES = 32
export const PROOF_BYTES = 32
/** runner -> caller: `MAGIC` + server nonce */
export const HELLO_BYTES = MAGIC.length + NONCE_BYTES
/** caller -> runner: `MAGIC` + client nonce + client proof */
export const ANSWER_BYTES = MAGIC.length + NONCE_BYTES + PROOF_BYTES

export type Side = "client" | "server"

const LABEL: Record<Side, Buffer> = {
  client: Buffer.from("switchboard cluster v1: client proof\n", "ascii"),
  server: Buffer.from("switchboard cluster v1: server proof\n", "ascii")
}

/** What `side` sends to prove it holds `secret` on the connection of these two nonces. */
export const proof = (side: Side, secret: Buffer, serverNonce: Buffer, clientNonce: Buffer): Buffer =>
  createHmac("sha256", secret).update(LABEL[side]).update(serverNonce).update(clientNonce).digest()

/**
 * The index of the secret `given` was made with, or -1. Every secret is tried (no early exit) and
 * each comparison is constant-time.
 */
export const matchingSecret = (
  side: Side,
  secrets: ReadonlyArray<Buffer>,
  serverNonce: Buffer,
  clientNonce: Buffer,
  given: Buffer
): number => {
  let found = -1
  secrets.forEach((secret, i) => {
    const expected = proof(side, secret, serverNonce, clientNonce)
    const equal = given.length === expected.length && timingSafeEqual(expected, given)
    if (equal && found === -1) found = i
  })
  return found
}

/**
 * Why a handshake did not complete:
 * - `Closed`: the peer closed before it was done (a port probe, or a runner that refused our proof);
 * - `NotCluster`: the peer's first bytes are not `MAGIC` (another protocol, or an older version);
 * - `WrongProof`: the peer's proof matches none of our secrets;
 * - `Timeout`: the peer did not finish within `CLUSTER_HANDSHAKE_TIMEOUT`.
 */
export class HandshakeError extends Data.TaggedError("ClusterHandshakeError")<{
  readonly reason: "Closed" | "NotCluster" | "WrongProof" | "Timeout"
}> {
  override get message() {
    return `cluster handshake failed: ${this.reason}`
  }
}

/**
 * Exactly `size` bytes from `conn`, in paused mode (`readable` + `read(size)`), so nothing past
 * them is consumed: what the peer sent after the handshake stays buffered for the cluster's reader,
 * which attaches its `data` listener afterwards.
 */
const readExactly = (conn: Socket, size: number): Effect.Effect<Buffer, HandshakeError> =>
  Effect.async<Buffer, HandshakeError>((resume) => {
    const cleanup = () => {
      conn.off("readable", onReadable)
      conn.off("end", onClosed)
      conn.off("close", onClosed)
      conn.off("error", onClosed)
    }
    function onReadable() {
      const chunk: Buffer | null = conn.read(size)
      if (chunk === null) return
      cleanup()
      resume(chunk.length === size ? Effect.succeed(chunk) : Effect.fail(new HandshakeError({ reason: "Closed" })))
    }
    function onClosed() {
      cleanup()
      resume(Effect.fail(new HandshakeError({ reason: "Closed" })))
    }
    if (conn.destroyed || conn.readableEnded) {
      resume(Effect.fail(new HandshakeError({ reason: "Closed" })))
      return
    }
    conn.on("readable", onReadable)
    conn.on("end", onClosed)
    conn.on("close", onClosed)
    conn.on("error", onClosed)
    return Effect.sync(cleanup)
  })

const write = (conn: Socket, bytes: Buffer): Effect.Effect<void, HandshakeError> =>
  Effect.async<void, HandshakeError>((resume) => {
    if (conn.destroyed || !conn.writable) {
      resume(Effect.fail(new HandshakeError({ reason: "Closed" })))
      return
    }
    conn.write(bytes, (error) => resume(error ? Effect.fail(new HandshakeError({ reason: "Closed" })) : Effect.void))
  })

const within = (timeout: Duration.DurationInput) => <A, R>(effect: Effect.Effect<A, HandshakeError, R>) =>
  Effect.timeoutFail(effect, { duration: timeout, onTimeout: () => new HandshakeError({ reason: "Timeout" }) })

/** The runner's side: succeeds once the caller proved a secret of `secrets`; the caller knows we hold it too. */
export const asServer = (
  conn: Socket,
  secrets: ReadonlyArray<Buffer>,
  timeout: Duration.DurationInput
): Effect.Effect<void, HandshakeError> =>
  Effect.gen(function*() {
    const serverNonce = randomBytes(NONCE_BYTES)
    yield* write(conn, Buffer.concat([MAGIC, serverNonce]))
    const magic = yield* readExactly(conn, MAGIC.length)
    if (!magic.equals(MAGIC)) return yield* new HandshakeError({ reason: "NotCluster" })
    const answer = yield* readExactly(conn, ANSWER_BYTES - MAGIC.length)
    const clientNonce = answer.subarray(0, NONCE_BYTES)
    const matched = matchingSecret("client", secrets, serverNonce, clientNonce, answer.subarray(NONCE_BYTES))
    if (matched === -1) return yield* new HandshakeError({ reason: "WrongProof" })
    yield* write(conn, proof("server", secrets[matched]!, serverNonce, clientNonce))
  }).pipe(within(timeout))

/** The caller's side: proves `secrets[0]`, and succeeds once the runner proved one of `secrets`. */
export const asClient = (
  conn: Socket,
  secrets: ReadonlyArray<Buffer>,
  timeout: Duration.DurationInput
): Effect.Effect<void, HandshakeError> =>
  Effect.gen(function*() {
    const hello = yield* readExactly(conn, HELLO_BYTES)
    if (!hello.subarray(0, MAGIC.length).equals(MAGIC)) return yield* new HandshakeError({ reason: "NotCluster" })
    const serverNonce = hello.subarray(MAGIC.length)
    const clientNonce = randomBytes(NONCE_BYTES)
    yield* write(conn, Buffer.concat([MAGIC, clientNonce, proof("client", secrets[0]!, serverNonce, clientNonce)]))
    const confirmation = yield* readExactly(conn, PROOF_BYTES)
    if (matchingSecret("server", secrets, serverNonce, clientNonce, confirmation) === -1) {
      return yield* new HandshakeError({ reason: "WrongProof" })
    }
  }).pipe(within(timeout))
