/**
 * The handshake that opens every cluster connection (`ClusterHandshake`), both sides on a real
 * loopback TCP connection: who is let in, who is refused and when, the rotation rule (the first
 * secret proves, any is accepted), and that what follows the handshake reaches the cluster's
 * reader intact.
 */
import { assert, describe, it } from "@effect/vitest"
import { ClusterHandshake } from "@switchboard/entities"
import { Effect, Either, Fiber, TestClock } from "effect"
import { randomBytes } from "node:crypto"
import * as Net from "node:net"

const OLD = Buffer.from("old-cluster-secret-0123456789abcdefghijkl")
const NEW = Buffer.from("new-cluster-secret-0123456789abcdefghijkl")
const TIMEOUT = "5 seconds"

/** Both ends of one loopback TCP connection, closed with the scope. */
const connection = Effect.acquireRelease(
  Effect.async<{ server: Net.Socket; client: Net.Socket; listener: Net.Server }>((resume) => {
    const listener = Net.createServer((server) => {
      const done = () => resume(Effect.succeed({ server, client, listener }))
      if (connected) done()
      else client.once("connect", done)
    })
    let connected = false
    let client: Net.Socket
    listener.listen(0, "127.0.0.1", () => {
      client = Net.createConnection((listener.address() as Net.AddressInfo).port, "127.0.0.1", () => {
        connected = true
      })
    })
  }),
  ({ client, listener, server }) =>
    Effect.sync(() => {
      client.destroy()
      server.destroy()
      listener.close()
    })
)

/** Everything `socket` receives until it closes. */
const received = (socket: Net.Socket) =>
  Effect.async<Buffer>((resume) => {
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.once("close", () => resume(Effect.succeed(Buffer.concat(chunks))))
  })

const both = (serverSecrets: ReadonlyArray<Buffer>, clientSecrets: ReadonlyArray<Buffer>) =>
  Effect.gen(function*() {
    const { client, server } = yield* connection
    const [runner, caller] = yield* Effect.all([
      Effect.either(ClusterHandshake.asServer(server, serverSecrets, TIMEOUT)).pipe(
        Effect.tap((result) => Either.isLeft(result) ? Effect.sync(() => server.destroy()) : Effect.void)
      ),
      Effect.either(ClusterHandshake.asClient(client, clientSecrets, TIMEOUT))
    ], { concurrency: 2 })
    return { runner, caller, client, server }
  })

const reason = (result: Either.Either<void, ClusterHandshake.HandshakeError>) =>
  Either.match(result, { onLeft: (error) => error.reason, onRight: () => "ok" })

describe("ClusterHandshake", () => {
  it.scoped("lets in a peer with the same secret, and what it sends next reaches the runner's reader intact", () =>
    Effect.gen(function*() {
      const { caller, client, runner, server } = yield* both([OLD], [OLD])
      assert.strictEqual(reason(runner), "ok")
      assert.strictEqual(reason(caller), "ok")
      // the cluster's first frame, written right after the handshake, read as the cluster reads
      const frame = randomBytes(5000)
      const arrived = Effect.async<Buffer>((resume) => {
        const chunks: Array<Buffer> = []
        server.on("data", (chunk: Buffer) => {
          chunks.push(chunk)
          if (Buffer.concat(chunks).length >= frame.length) resume(Effect.succeed(Buffer.concat(chunks)))
        })
      })
      client.write(frame)
      assert.isTrue((yield* arrived).equals(frame))
    }))

  it.scoped("refuses a caller with another secret, and the caller sees the runner close", () =>
    Effect.gen(function*() {
      const { caller, runner } = yield* both([OLD], [NEW])
      assert.strictEqual(reason(runner), "WrongProof")
      assert.strictEqual(reason(caller), "Closed")
    }))

  it.scoped("during a rotation proves the first secret and accepts any listed one", () =>
    Effect.gen(function*() {
      // step 1: runners already accept the new secret while callers still prove the old one
      assert.deepStrictEqual([reason((yield* both([OLD, NEW], [OLD])).runner)], ["ok"])
      // step 2: callers prove the new one; a runner not yet moved still accepts it
      const moved = yield* both([OLD, NEW], [NEW, OLD])
      assert.deepStrictEqual([reason(moved.runner), reason(moved.caller)], ["ok", "ok"])
      const notMoved = yield* both([NEW, OLD], [OLD, NEW])
      assert.deepStrictEqual([reason(notMoved.runner), reason(notMoved.caller)], ["ok", "ok"])
      // a secret no longer listed is refused
      assert.strictEqual(reason((yield* both([NEW], [OLD, NEW])).runner), "WrongProof")
    }))

  it.scoped("refuses a stranger's first bytes that are not the handshake, without waiting for more", () =>
    Effect.gen(function*() {
      const { client, server } = yield* connection
      const reply = yield* Effect.fork(received(client))
      const runner = yield* Effect.fork(Effect.either(ClusterHandshake.asServer(server, [OLD], TIMEOUT)))
      // a msgpack request frame, as the cluster's protocol sends one
      client.write(Buffer.from("93a752657175657374a131a450696e67", "hex"))
      assert.strictEqual(reason(yield* Fiber.join(runner)), "NotCluster")
      server.destroy()
      const bytes = yield* Fiber.join(reply)
      // the runner's challenge, and nothing else
      assert.strictEqual(bytes.length, ClusterHandshake.HELLO_BYTES)
      assert.isTrue(bytes.subarray(0, 8).equals(ClusterHandshake.MAGIC))
    }))

  it.scoped("drops a stranger that never speaks after the handshake timeout", () =>
    Effect.gen(function*() {
      const { server } = yield* connection
      const runner = yield* Effect.fork(Effect.either(ClusterHandshake.asServer(server, [OLD], TIMEOUT)))
      yield* TestClock.adjust("4 seconds")
      assert.isNull(runner.unsafePoll())
      yield* TestClock.adjust("1 second")
      assert.strictEqual(reason(yield* Fiber.join(runner)), "Timeout")
    }))

  it.scoped("a caller refuses a fake runner that cannot prove the secret, and writes nothing after its proof", () =>
    Effect.gen(function*() {
      const { client, server } = yield* connection
      const fromCaller = Effect.async<Buffer>((resume) => {
        const chunks: Array<Buffer> = []
        server.on("data", (chunk: Buffer) => chunks.push(chunk))
        server.once("end", () => resume(Effect.succeed(Buffer.concat(chunks))))
      })
      const heard = yield* Effect.fork(fromCaller)
      // the fake runner: a well-formed challenge, then a confirmation made without the secret
      server.write(Buffer.concat([ClusterHandshake.MAGIC, randomBytes(ClusterHandshake.NONCE_BYTES)]))
      server.write(randomBytes(ClusterHandshake.PROOF_BYTES))
      const caller = yield* Effect.either(ClusterHandshake.asClient(client, [OLD], TIMEOUT))
      assert.strictEqual(reason(caller), "WrongProof")
      client.end()
      assert.strictEqual((yield* Fiber.join(heard)).length, ClusterHandshake.ANSWER_BYTES)
    }))

  it.scoped("a caller refuses a server that does not speak the handshake", () =>
    Effect.gen(function*() {
      const { client, server } = yield* connection
      server.write(Buffer.alloc(ClusterHandshake.HELLO_BYTES, 0x90))
      assert.strictEqual(reason(yield* Effect.either(ClusterHandshake.asClient(client, [OLD], TIMEOUT))), "NotCluster")
    }))
})
