/**
 * The runners' cluster port lets in only nodes that prove `CLUSTER_SECRET` (docs/CONFIGURATION.md
 * "The cluster port"): a runner and an api node started as an operator starts them, and strangers
 * on plain TCP sockets. Real Postgres only (a runner coordinates through it).
 */
import { RpcSerialization } from "@effect/rpc"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Cluster, ClusterAuthConfig, ClusterHandshake, ProbeEntity } from "@switchboard/entities"
import { Effect, Either, Layer, Redacted, Schedule } from "effect"
import * as Net from "node:net"
import { call, clusterSecret, freePort, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()

/**
 * A TCP connection to the runner's cluster port. `settled(ms)`: "closed" once the runner closed it,
 * "replied" as soon as it received anything but the runner's challenge, else "open" after `ms`.
 */
const connectStranger = async (port: number) => {
  const socket = Net.createConnection(port, "127.0.0.1")
  await new Promise<void>((done, fail) => socket.once("connect", done).once("error", fail))
  const chunks: Array<Buffer> = []
  let onChange = () => {}
  socket.on("data", (chunk: Buffer) => {
    chunks.push(chunk)
    onChange()
  })
  socket.on("error", () => {})
  let closed = false
  socket.once("close", () => {
    closed = true
    onChange()
  })
  const received = () => Buffer.concat(chunks)
  /** anything but (a prefix of) the challenge is a reply */
  const replied = () => {
    const bytes = received()
    const prefix = Math.min(bytes.length, ClusterHandshake.MAGIC.length)
    return bytes.length > ClusterHandshake.HELLO_BYTES ||
      !bytes.subarray(0, prefix).equals(ClusterHandshake.MAGIC.subarray(0, prefix))
  }
  const state = () => replied() ? "replied" as const : closed ? "closed" as const : undefined
  const settled = (ms: number) =>
    new Promise<"closed" | "replied" | "open">((done) => {
      const timer = setTimeout(() => done("open"), ms)
      onChange = () => {
        const now = state()
        if (now !== undefined) {
          clearTimeout(timer)
          done(now)
        }
      }
      onChange()
    })
  return { socket, settled, received }
}

const count = (service: ServiceProcess, text: string) => service.output().split(text).length - 1

/**
 * Whether `service` logs `text` (more than `seen` times so far) within 10 s: its log line may
 * follow the close the peer saw.
 */
const logs = async (service: ServiceProcess, text: string, seen = 0) => {
  for (let waited = 0; waited < 10_000 && count(service, text) <= seen; waited += 100) {
    await new Promise((r) => setTimeout(r, 100))
  }
  return count(service, text) > seen
}

describe.skipIf(url === undefined)("a runner's cluster port", () => {
  let runner: ServiceProcess
  let api: ServiceProcess
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let dbUrl: string
  let clusterPort: number

  beforeAll(async () => {
    database = await e2eDatabase(url!, "clusterport")
    dbUrl = database.url
    const env = { DATABASE_URL: dbUrl, LOG_LEVEL: "info" }
    const [cluster, runnerHttp, apiPort] = await Promise.all([freePort(), freePort(), freePort()])
    clusterPort = cluster
    runner = startService("runner", {
      ...env,
      HOST: "127.0.0.1",
      PORT: String(clusterPort),
      CLUSTER_HANDSHAKE_TIMEOUT: "2 seconds"
    }, runnerHttp)
    api = startService("api", env, apiPort)
    // ready = the api node reached the runner: it proved the test's secret, and the runner proved it back
    await waitFor(`${api.baseUrl}/ready`, 120_000, 200, api)
  }, 150_000)

  afterAll(async () => {
    await Promise.all([runner?.stop(), api?.stop()])
    await database?.drop()
  }, 60_000)

  it("closes a stranger that sends a Runners.Ping in the cluster's wire format, without a reply", async () => {
    const stranger = await connectStranger(clusterPort)
    // what a cluster client without the handshake writes first: a msgpack `Ping` request
    const ping = RpcSerialization.msgPack.unsafeMake().encode({
      _tag: "Request",
      id: "1",
      tag: "Ping",
      payload: {},
      headers: []
    }) as Uint8Array
    stranger.socket.write(ping)
    // closed at once (its first 8 bytes are not the handshake's), with no reply (no Pong, no Exit):
    // all it heard is the runner's challenge, a fixed prefix and a random nonce
    const bytes = () => stranger.received().toString("hex")
    assert.strictEqual(await stranger.settled(30_000), "closed", bytes())
    assert.strictEqual(stranger.received().length, ClusterHandshake.HELLO_BYTES, bytes())
    assert.isTrue(stranger.received().subarray(0, ClusterHandshake.MAGIC.length).equals(ClusterHandshake.MAGIC))
    assert.isTrue(await logs(runner, "refused: NotCluster"), runner.output().slice(-2000))
  }, 60_000)

  it("drops a stranger that never speaks once the handshake timeout has passed", async () => {
    const stranger = await connectStranger(clusterPort)
    assert.strictEqual(await stranger.settled(30_000), "closed")
    assert.strictEqual(stranger.received().length, ClusterHandshake.HELLO_BYTES)
    assert.isTrue(await logs(runner, "refused: Timeout"), runner.output().slice(-2000))
  }, 60_000)

  it("refuses a caller that proves another secret", async () => {
    const socket = Net.createConnection(clusterPort, "127.0.0.1")
    await new Promise<void>((done, fail) => socket.once("connect", done).once("error", fail))
    const result = await Effect.runPromise(Effect.either(
      ClusterHandshake.asClient(socket, [Buffer.from("not-the-cluster-secret-0123456789abcdef")], "10 seconds")
    ))
    socket.destroy()
    // the runner closed without confirming: this caller never got to write a cluster message
    assert.strictEqual(Either.match(result, { onLeft: (error) => error.reason, onRight: () => "let in" }), "Closed")
    assert.isTrue(await logs(runner, "refused: WrongProof"), runner.output().slice(-2000))
  }, 60_000)

  it("leaves an api node with another secret without a cluster: /ready says so, and both sides log why", async () => {
    const refusedBefore = count(runner, "refused: WrongProof")
    const stray = startService("api", {
      DATABASE_URL: dbUrl,
      CLUSTER_SECRET: "another-cluster-secret-0123456789abcdef"
    }, await freePort())
    try {
      await waitFor(`${stray.baseUrl}/health`, 120_000, 200, stray)
      const ready = await call(stray.baseUrl, "GET", "/ready")
      assert.strictEqual(ready.status, 503)
      assert.strictEqual(ready.body.checks.cluster.status, "down")
      assert.isTrue(await logs(stray, `cluster connection to 127.0.0.1:${clusterPort} refused: Closed`), stray.output())
      assert.isTrue(await logs(runner, "refused: WrongProof", refusedBefore), runner.output().slice(-2000))
    } finally {
      await stray.stop()
    }
  }, 150_000)

  it("answers an entity call from a cluster client that proves the secret", async () => {
    const answer = await Effect.gen(function*() {
      const probe = yield* ProbeEntity.Probe.client
      return yield* probe("probe-1").Ping().pipe(
        Effect.catchAllDefect(Effect.fail),
        Effect.retry({ times: 20, schedule: Schedule.spaced("500 millis") })
      )
    }).pipe(
      Effect.provide(Cluster.client.pipe(
        Layer.provide(Database.layerPostgres(Redacted.make(dbUrl), 2)),
        Layer.provide(ClusterAuthConfig.layer({ secrets: ClusterAuthConfig.secretsOf(clusterSecret) }))
      )),
      Effect.scoped,
      Effect.runPromise
    )
    assert.strictEqual(answer.runner, `127.0.0.1:${clusterPort}`)
    const ready = await call(api.baseUrl, "GET", "/ready")
    assert.strictEqual(ready.body.checks.cluster.status, "up")
  }, 90_000)
})
