/**
 * The infrastructure every node needs, from the environment: the database (migrated before
 * anything else can use it), the Redis connection or its stand-ins, rate limiter and live events.
 */
import { Layer } from "effect"
import * as Database from "./Database.js"
import * as DatabaseConfig from "./DatabaseConfig.js"
import * as Migrations from "./Migrations.js"
import * as Redis from "./Redis.js"

/** Needs `DatabaseConfig` and `RedisConfig`. */
export const layerWithConfig = Layer.mergeAll(
  Migrations.layer,
  Redis.clientLayer,
  Redis.rateLimiterLayer,
  Redis.liveEventsLayer
).pipe(Layer.provideMerge(Database.layer))

export const layer = layerWithConfig.pipe(
  Layer.provideMerge(Layer.mergeAll(DatabaseConfig.layerFromEnv, Redis.configLayerFromEnv)),
  Layer.orDie
)
