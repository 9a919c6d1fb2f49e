/**
 * Redis, when configured (`REDIS_URL`): the HTTP rate limits, the readiness probe's connection
 * and the cache invalidations (`Invalidations`). Without it, in-memory stand-ins run in the single
 * process.
 */
import { RateLimiter } from "@effect/experimental"
import * as RedisRateLimiter from "@effect/experimental/RateLimiter/Redis"
import { Config, Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { Redis, type RedisOptions } from "ioredis"
import * as Invalidations from "./Invalidations.js"

export class RedisConfig extends Context.Tag("@switchboard/infra/RedisConfig")<RedisConfig, {
  /** `redis://[:password@]host:port[/db]`; `None` selects the in-memory stand-ins */
  readonly url: Option.Option<Redacted.Redacted>
  /** Prefix of every key and channel this deployment uses */
  readonly keyPrefix: string
}>() {}

export const config = Config.all({
  url: Config.option(Config.redacted("REDIS_URL")).pipe(
    Config.map(Option.filter((url) => Redacted.value(url).trim() !== ""))
  ),
  keyPrefix: Config.string("REDIS_KEY_PREFIX").pipe(Config.withDefault("sb:"))
})

export const configLayerFromEnv = Layer.effect(RedisConfig, config)

export const configLayer = (options: Partial<Context.Tag.Service<RedisConfig>>) =>
  Layer.effect(RedisConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options })))

/** ioredis options from a URL; commands fail fast while disconnected (callers fail open). */
export const redisOptions = (url: Redacted.Redacted): RedisOptions => {
  const u = new URL(Redacted.value(url))
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0
  return {
    host: u.hostname,
    port: u.port === "" ? 6379 : Number(u.port),
    db: Number.isFinite(db) ? db : 0,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.protocol === "rediss:" ? { tls: {} } : {}),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (times: number) => Math.min(times * 200, 2_000)
  }
}

/** The shared command connection, or `None` in embedded mode. */
export class RedisClient extends Context.Tag("@switchboard/infra/RedisClient")<RedisClient, Option.Option<Redis>>() {}

const acquire = (options: RedisOptions) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const redis = new Redis(options)
      // connection errors are reported by the readiness probe and the callers; do not crash
      redis.on("error", () => {})
      return redis
    }),
    (redis) => Effect.promise(() => redis.quit().catch(() => redis.disconnect()))
  )

export const clientLayer = Layer.scoped(
  RedisClient,
  Effect.gen(function*() {
    const { url } = yield* RedisConfig
    if (Option.isNone(url)) return Option.none()
    return Option.some(yield* acquire(redisOptions(url.value)))
  })
)

/**
 * The experimental Redis store closes its connection with a `quit()` that rejects (a defect at
 * shutdown) when Redis is down; build it in a scope of our own whose closing ignores that.
 */
const redisStoreLayer = (options: Parameters<typeof RedisRateLimiter.make>[0]) =>
  Layer.scoped(
    RateLimiter.RateLimiterStore,
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void).pipe(Effect.catchAllCause(() => Effect.void)))
      return yield* RedisRateLimiter.make(options).pipe(Scope.extend(scope))
    })
  )

/** `@effect/experimental` RateLimiter on Redis (atomic Lua) or in memory. */
export const rateLimiterLayer = Layer.unwrapEffect(Effect.map(RedisConfig, ({ keyPrefix, url }) =>
  Option.match(url, {
    onNone: () => RateLimiter.layer.pipe(Layer.provide(RateLimiter.layerStoreMemory)),
    onSome: (url) =>
      RateLimiter.layer.pipe(
        Layer.provide(redisStoreLayer({ ...redisOptions(url), prefix: `${keyPrefix}ratelimit:` }))
      )
  })))

/** The client, the rate limiter and the invalidation fan-out; needs `RedisConfig`. */
export const layer = Layer.merge(rateLimiterLayer, Layer.suspend(() => Invalidations.layer)).pipe(
  Layer.provideMerge(clientLayer)
)

/** `layer` configured from the environment (`REDIS_URL`, `REDIS_KEY_PREFIX`). */
export const layerFromEnv = layer.pipe(Layer.provideMerge(configLayerFromEnv), Layer.orDie)
