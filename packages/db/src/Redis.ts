/**
 * Redis, when configured (`REDIS_URL`): rate limits and the live fan-out between nodes. Without
 * it, in-memory stand-ins of the same services run in the single process (ARCHITECTURE 6).
 */
import { RateLimiter } from "@effect/experimental"
import * as RedisRateLimiter from "@effect/experimental/RateLimiter/Redis"
import { Config, Context, Effect, Exit, Layer, Option, PubSub, Redacted, Scope, Stream } from "effect"
import { Redis, type RedisOptions } from "ioredis"

export class RedisConfig extends Context.Tag("@switchboard/db/RedisConfig")<RedisConfig, {
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
export class RedisClient extends Context.Tag("@switchboard/db/RedisClient")<RedisClient, Option.Option<Redis>>() {}

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

/**
 * Live fan-out: a message published on any node reaches every subscriber of its topic on every
 * node. Volatile by design (the durable record is always a Postgres row).
 */
export class LiveEvents extends Context.Tag("@switchboard/db/LiveEvents")<LiveEvents, {
  readonly publish: (topic: string, message: string) => Effect.Effect<void>
  readonly subscribe: (topic: string) => Stream.Stream<string>
}>() {}

const local = Effect.gen(function*() {
  const hub = yield* PubSub.unbounded<{ readonly topic: string; readonly message: string }>()
  yield* Effect.addFinalizer(() => PubSub.shutdown(hub))
  return {
    hub,
    subscribe: (topic: string) =>
      Stream.fromPubSub(hub).pipe(
        Stream.filter((m) => m.topic === topic),
        Stream.map((m) => m.message)
      )
  }
})

export const liveEventsLayer = Layer.scoped(
  LiveEvents,
  Effect.gen(function*() {
    const { keyPrefix, url } = yield* RedisConfig
    const { hub, subscribe } = yield* local
    if (Option.isNone(url)) {
      return {
        publish: (topic, message) => PubSub.publish(hub, { topic, message }).pipe(Effect.asVoid),
        subscribe
      }
    }
    const publisher = yield* acquire(redisOptions(url.value))
    const subscriber = yield* acquire({ ...redisOptions(url.value), enableOfflineQueue: true })
    const channelPrefix = `${keyPrefix}live:`
    yield* Effect.promise(() => subscriber.psubscribe(`${channelPrefix}*`).catch(() => 0))
    subscriber.on("pmessage", (_pattern: string, channel: string, message: string) => {
      hub.unsafeOffer({ topic: channel.slice(channelPrefix.length), message })
    })
    return {
      publish: (topic, message) =>
        Effect.tryPromise(() => publisher.publish(`${channelPrefix}${topic}`, message)).pipe(
          Effect.catchAll((error) =>
            Effect.logWarning("live event not published: Redis unreachable").pipe(
              Effect.annotateLogs({ topic, error: String(error) })
            )
          ),
          Effect.asVoid
        ),
      subscribe
    }
  })
)
