/**
 * Redis for tests: the server of `TEST_REDIS_URL` or `REDIS_URL` (real mode), else the in-memory
 * stand-ins; every layer gets a key prefix of its own, so files running in parallel never share keys.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import * as Redis from "../Redis.js"

/** The server the tests use, if any. */
export const testRedisUrl = (): string | undefined => {
  const url = process.env["TEST_REDIS_URL"] || process.env["REDIS_URL"]
  return url && url.trim() !== "" ? url : undefined
}

/** `RedisConfig` for `redisUrl` (default `testRedisUrl()`) under a fresh key prefix. */
export const configLayerWith = (options: { readonly redisUrl?: string | undefined } = {}) =>
  Layer.unwrapEffect(Effect.sync(() => {
    const redisUrl = options.redisUrl ?? testRedisUrl()
    return Redis.configLayer({
      url: redisUrl ? Option.some(Redacted.make(redisUrl)) : Option.none(),
      keyPrefix: `sbt_${process.pid}_${randomBytes(4).toString("hex")}:`
    })
  }))

/** The client and the rate limiter, with their config. */
export const layerWith = (options: { readonly redisUrl?: string | undefined } = {}) =>
  Redis.layer.pipe(Layer.provideMerge(configLayerWith(options)), Layer.orDie)
