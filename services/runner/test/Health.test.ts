/** The runner's `/health` and `/ready` (`Health.ts`): the decision, then the answers on a real metrics listener. */
import { assert, describe, it } from "@effect/vitest"
import { MetricsConfig, MetricsServer } from "@switchboard/infra"
import { Effect, Layer, Option } from "effect"
import { assess } from "../src/Health.js"

const healthy = {
  databaseAnswered: true,
  heldShards: 300,
  lockConfirmedAgoMs: 1_500,
  lockExpirationMs: 8_000,
  providerInput: undefined
}

const failing = (checks: Record<string, MetricsServer.Check>) =>
  Object.entries(checks).filter(([, c]) => !c.ok).map(([name]) => name)

describe("the runner's readiness", () => {
  it("is ready when Postgres answers, it holds shard locks confirmed recently and no provider input waits too long", () => {
    assert.deepStrictEqual(failing(assess(healthy)), [])
    assert.deepStrictEqual(failing(assess({ ...healthy, databaseAnswered: false })), ["database"])
    assert.deepStrictEqual(failing(assess({ ...healthy, heldShards: 0 })), ["shards"])
    assert.deepStrictEqual(failing(assess({ ...healthy, lockConfirmedAgoMs: undefined })), ["lock_refresh"])
    assert.deepStrictEqual(failing(assess({ ...healthy, lockConfirmedAgoMs: 8_001 })), ["lock_refresh"])
    assert.deepStrictEqual(failing(assess({ ...healthy, lockConfirmedAgoMs: 8_000 })), [])
    const degraded = assess({ ...healthy, providerInput: "provider input waited 45 s to be recorded (12 items)" })
    assert.deepStrictEqual(failing(degraded), ["provider_input"])
    assert.strictEqual(degraded["provider_input"]!.detail, "provider input waited 45 s to be recorded (12 items)")
  })

  const serve = (checks: Record<string, MetricsServer.Check>) =>
    Effect.gen(function*() {
      const server = yield* MetricsServer.MetricsServer
      const { host, port } = Option.getOrThrow(server.address)
      const get = (path: string) =>
        Effect.promise(async () => {
          const response = await fetch(`http://${host}:${port}${path}`)
          return { status: response.status, body: await response.json() as Record<string, unknown> }
        })
      return { health: yield* get("/health"), ready: yield* get("/ready") }
    }).pipe(
      Effect.provide(
        MetricsServer.layer.pipe(
          Layer.provide(Layer.succeed(MetricsServer.Probes, { ready: Effect.succeed(checks) })),
          Layer.provide(MetricsConfig.layer({ port: Option.some(0), host: "127.0.0.1" }))
        )
      )
    )

  it.scoped("answers /health 200 and /ready 200 or 503 naming each check, on the metrics listener", () =>
    Effect.gen(function*() {
      const up = yield* serve(assess(healthy))
      assert.strictEqual(up.health.status, 200)
      assert.strictEqual(up.ready.status, 200)
      assert.strictEqual(up.ready.body["status"], "ready")
      const down = yield* serve(assess({ ...healthy, databaseAnswered: false }))
      assert.strictEqual(down.health.status, 200, "alive while the database is away")
      assert.strictEqual(down.ready.status, 503)
      assert.strictEqual(down.ready.body["status"], "not_ready")
      assert.deepInclude((down.ready.body["checks"] as Record<string, unknown>)["database"], { ok: false })
    }))
})
