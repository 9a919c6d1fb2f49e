/**
 * How the api node's sends share their writes' statements (`SendWritesRepo.writeShared` over
 * `GroupCommitLeader`): what one statement writes once at most, the order in which a statement
 * takes its sends' locks, and how many shared statements run at once.
 */
import { Config, Effect, Option } from "effect"
import * as DatabaseConfig from "./DatabaseConfig.js"
import type { SendWrite } from "./SendWritesRepo.js"

/**
 * What a statement writes once at most: the send's conversation (its channel and recipient), a row
 * one statement cannot lock and update twice.
 */
export const conversationKey = (input: SendWrite): string => `${input.message.channel_id} ${input.message.to}`

/**
 * The order of a statement's sends, which is the order it takes their locks in (each send's CTEs
 * are evaluated in turn): by workspace, recipient (its contact, new or found) and channel (its
 * conversation). Two api nodes' statements that share conversations lock them in the same order,
 * so they wait for each other instead of deadlocking.
 */
export const lockOrder = (a: SendWrite, b: SendWrite): number => {
  const [x, y] = [a.message, b.message]
  return compare(x.workspace_id, y.workspace_id) || compare(x.to, y.to) || compare(x.channel_id, y.channel_id)
}

const compare = (a: string, b: string) => a < b ? -1 : a > b ? 1 : 0

/**
 * Shared statements in flight at once on one api node (`SEND_GROUP_COMMIT_STATEMENTS`): by default
 * half the pool, at most 4, so the sends' claims, checks and reads keep connections of their own
 * (each send takes one for its claim and one for its checks before it writes), and a 2-core
 * database gains nothing from more statements at once, which would only split the batches. One
 * for the embedded database: it has a single connection, more would only queue for it.
 */
export const statementsInFlight = Effect.gen(function*() {
  const set = yield* Config.option(
    Config.integer("SEND_GROUP_COMMIT_STATEMENTS").pipe(
      Config.validate({ message: "must be 1 or more", validation: (n) => n >= 1 })
    )
  )
  if (Option.isSome(set)) return set.value
  // the pool as configured where the process provides it (a test database's pool), else from the env
  const provided = yield* Effect.serviceOption(DatabaseConfig.DatabaseConfig)
  const { maxConnections, url } = Option.isSome(provided) ? provided.value : yield* DatabaseConfig.config
  return Option.isNone(url) ? 1 : Math.max(1, Math.min(4, Math.floor(maxConnections / 2)))
}).pipe(Effect.orDie)
