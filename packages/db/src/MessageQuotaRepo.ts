/**
 * The monthly message quota's count (`monthly_message_quota`): a workspace's outbound messages on
 * channels other than sandbox accepted since the period began. `lockWorkspace` then
 * `acceptedSince` inside the send transaction: a limited workspace's sends are judged one after
 * the other, so concurrent sends never overshoot.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import * as Partitions from "./Partitions.js"
import { CountRow, dieOnDatabaseError } from "./Rows.js"

/**
 * The class id of the transaction-scoped advisory locks that serialise a limited workspace's
 * sends (`pg_advisory_xact_lock(MESSAGE_QUOTA_LOCK, hashtext(workspace_id))`; the two-key space
 * never meets the one-key locks such as the sandbox allocation lock).
 */
export const MESSAGE_QUOTA_LOCK = 4243

export class MessageQuotaRepo extends Effect.Service<MessageQuotaRepo>()("@switchboard/db/MessageQuotaRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Holds the workspace's quota lock until the transaction ends. */
    const lockWorkspace = Effect.fn("MessageQuotaRepo.lockWorkspace")(function*(workspaceId: string) {
      yield* sql`SELECT pg_advisory_xact_lock(${MESSAGE_QUOTA_LOCK}, hashtext(${workspaceId}))`
    }, dieOnDatabaseError)

    /** Outbound messages on non-sandbox channels accepted at or after `since` (whatever became of them). */
    const acceptedSince = Effect.fn("MessageQuotaRepo.acceptedSince")(function*(workspaceId: string, since: string) {
      // read after the lock: a new statement, so a snapshot with every send committed before us.
      // An outbound message's `created_at` is the time of its id: the partitions from `since` on
      const row = yield* SqlSchema.findOne({
        Request: Schema.Void,
        Result: CountRow,
        execute: () =>
          sql`SELECT count(*)::int AS n FROM messages m
            JOIN channels c ON c.id = m.channel_id
            WHERE m.workspace_id = ${workspaceId} AND m.created_at >= ${since} AND m.direction = 'outbound'
              AND ${Partitions.idsFrom(sql, "msg", "m.id", Date.parse(since))}
              AND c.provider <> 'sandbox'`
      })(undefined)
      return Option.match(row, { onNone: () => 0, onSome: (r) => r.n })
    }, dieOnDatabaseError)

    return { lockWorkspace, acceptedSince } as const
  })
}) {}
