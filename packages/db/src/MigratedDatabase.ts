/**
 * The database every node needs, from its configuration: the SQL client, migrated before anything
 * else can use it. (Redis and logging are `@switchboard/infra`; a node's main provides both.)
 */
import { Layer } from "effect"
import * as Database from "./Database.js"
import * as DatabaseConfig from "./DatabaseConfig.js"
import * as Migrations from "./Migrations.js"

/** Needs `DatabaseConfig`. */
export const layerWithConfig = Migrations.layer.pipe(Layer.provideMerge(Database.layer))

export const layer = layerWithConfig.pipe(Layer.provideMerge(DatabaseConfig.layerFromEnv), Layer.orDie)
