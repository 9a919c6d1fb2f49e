/**
 * Invalidations: one-way messages telling every process to drop what it cached about something
 * (docs/API.md: the API key cache). With Redis, a `PUBLISH` on `<prefix>invalidate` and one
 * subscriber connection per process that listens, opened by the first listener; in embedded mode
 * (one process) they go to this process's listeners only.
 *
 * A listener is told to `reset` (forget everything) whenever messages may have been lost: the
 * subscriber disconnected. `live()` is false from then until it has subscribed again, so a cache
 * stores nothing while it could miss an invalidation.
 */
import { Context, Effect, Layer, Option } from "effect"
import { Redis } from "ioredis"
import { RedisClient, RedisConfig, redisOptions } from "./Redis.js"

export interface Listener {
  /** A topic that changed (e.g. `api_key:key_...`, `workspace:ws_...`) */
  readonly message: (topic: string) => void
  /** Messages may have been lost: drop everything */
  readonly reset: () => void
}

export class Invalidations extends Context.Tag("@switchboard/infra/Invalidations")<Invalidations, {
  /**
   * Tells this process's listeners at once, then every other process. Never fails: when Redis
   * cannot take the message it is logged, and other processes' caches hold the stale entry for
   * at most their TTL.
   */
  readonly publish: (topic: string) => Effect.Effect<void>
  /** Registers a listener (and, with Redis, opens the subscriber connection on the first one). */
  readonly listen: (listener: Listener) => Effect.Effect<void>
  /** Whether messages from every process reach this one right now. */
  readonly live: () => boolean
  /**
   * Whether messages reach other processes at all (Redis). Without it only this process hears
   * them: a cache is then safe only where this is the only process (the embedded database).
   */
  readonly fanOut: boolean
}>() {}

const make = Effect.gen(function*() {
  const { keyPrefix, url } = yield* RedisConfig
  const client = yield* RedisClient
  const channel = `${keyPrefix}invalidate`
  const listeners: Array<Listener> = []
  const local = (topic: string) => {
    for (const l of listeners) l.message(topic)
  }

  if (Option.isNone(url) || Option.isNone(client)) {
    return {
      publish: (topic: string) => Effect.sync(() => local(topic)),
      listen: (listener: Listener) => Effect.sync(() => void listeners.push(listener)),
      live: () => true,
      fanOut: false
    }
  }

  let subscriber: Redis | undefined
  let live = false
  const reset = () => {
    live = false
    for (const l of listeners) l.reset()
  }
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      live = false
      subscriber?.disconnect()
    })
  )
  const open = () => {
    // our own resubscription on every `ready`: `live` turns true only once Redis confirmed it
    const s = new Redis({ ...redisOptions(url.value), autoResubscribe: false, maxRetriesPerRequest: null })
    s.on("error", () => {})
    s.on("close", reset)
    s.on("ready", () => {
      s.subscribe(channel).then(
        () => {
          // anything cached before this moment was stored while messages could be missed
          for (const l of listeners) l.reset()
          live = true
        },
        () => s.disconnect(true)
      )
    })
    s.on("message", (from: string, topic: string) => {
      if (from === channel) local(topic)
    })
    return s
  }

  return {
    publish: (topic: string) =>
      Effect.sync(() => local(topic)).pipe(
        Effect.zipRight(
          Effect.tryPromise(() => whenReady(client.value).then(() => client.value.publish(channel, topic)))
        ),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("invalidation not published; other nodes drop it at their cache TTL", cause)
        ),
        Effect.annotateLogs({ topic })
      ),
    listen: (listener: Listener) =>
      Effect.sync(() => {
        listeners.push(listener)
        subscriber ??= open()
      }),
    live: () => live,
    fanOut: true
  }
})

/**
 * Resolves once `redis` can take a command (at most `READY_WAIT_MS`). The client queues nothing
 * while it connects (`enableOfflineQueue: false`), so a process that publishes right after it
 * started (the admin CLI suspending a workspace) would otherwise lose its one message.
 */
const whenReady = (redis: Redis): Promise<void> =>
  redis.status === "ready" ? Promise.resolve() : new Promise<void>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer)
      redis.off("ready", done)
      resolve()
    }
    const timer = setTimeout(() => {
      redis.off("ready", done)
      reject(new Error("Redis not ready"))
    }, READY_WAIT_MS)
    redis.once("ready", done)
  })

const READY_WAIT_MS = 2_000

/** Needs `RedisConfig` and `RedisClient`. */
export const layer = Layer.scoped(Invalidations, make)
