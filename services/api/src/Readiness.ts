/** The checks behind `/ready`: database, Redis and the cluster, each timed. */
import { SqlClient } from "@effect/sql"
import type { HealthApi } from "@switchboard/api"
import { ProbeEntity } from "@switchboard/entities/protocol"
import { Redis } from "@switchboard/infra"
import { Clock, type Duration, Effect, Option } from "effect"

type Check = typeof HealthApi.DependencyCheck.Type

const timed = <E, R>(
  probe: Effect.Effect<unknown, E, R>,
  timeout: Duration.DurationInput
): Effect.Effect<Check, never, R> =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    const ok = yield* probe.pipe(
      Effect.timeout(timeout),
      Effect.as(true),
      Effect.catchAllCause(() => Effect.succeed(false))
    )
    const latency = (yield* Clock.currentTimeMillis) - start
    return { status: ok ? "up" : "down", latency_ms: latency } as const
  })

export class Readiness extends Effect.Service<Readiness>()("@switchboard/service-api/Readiness", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const redis = yield* Redis.RedisClient
    const probe = yield* ProbeEntity.Probe.client
    return {
      check: Effect.all({
        // SQL in a service on purpose: a reachability probe of the database itself (no table), like the Redis ping
        database: timed(sql`SELECT 1`, "2 seconds"),
        redis: Option.match(redis, {
          onNone: () => Effect.succeed<Check>({ status: "disabled", latency_ms: null }),
          onSome: (client) => timed(Effect.tryPromise(() => client.ping()), "1 second")
        }),
        cluster: timed(probe("ready").Ping(), "3 seconds")
      }, { concurrency: "unbounded" })
    }
  })
}) {}
