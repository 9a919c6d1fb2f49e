/**
 * Counts behind `GET /v1/usage`. A feature whose tables are not installed in this database yet
 * counts as zero (the reads check the table exists first).
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { MessageStateMachine } from "@switchboard/domain"
import { Effect, Schema } from "effect"
import { ContactCtes } from "./ContactsRepo.js"
import * as Partitions from "./Partitions.js"
import { dieOnDatabaseError } from "./Rows.js"

/** One count: `count(*)::int` (a number), or a `bigint` sum (a string from the driver). */
const CountRows = Schema.Array(Schema.Struct({ n: Schema.Union(Schema.Number, Schema.NumberFromString) }))
const decodeCount = Schema.decodeUnknown(CountRows)
const decodeTables = Schema.decodeUnknown(Schema.Array(Schema.Struct({ name: Schema.String })))

export class UsageRepo extends Effect.Service<UsageRepo>()("@switchboard/db/UsageRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const tables = Effect.map(
      Effect.flatMap(
        sql`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`,
        decodeTables
      ),
      (rows) => new Set(rows.map((r) => r.name))
    )

    const counts = Effect.fn("UsageRepo.counts")(
      function*(workspaceId: string, periodStart: string, periodEnd: string, now: string) {
        const have = yield* tables
        // the period's outbound messages by id, so their partitions: an outbound message's
        // `created_at` is the time of its id, and it is sent within a day of being made (it
        // expires then)
        const made = Partitions.idWindow(
          "msg",
          Partitions.dayFloor(Date.parse(periodStart) - Partitions.CLOCK_SLACK_MS),
          Partitions.dayCeil(Date.parse(periodEnd))
        )
        const sentIn = Partitions.idWindow(
          "msg",
          Partitions.dayFloor(
            Date.parse(periodStart) - MessageStateMachine.QUEUED_EXPIRY_MS - Partitions.CLOCK_SLACK_MS
          ),
          Partitions.dayCeil(Date.parse(periodEnd))
        )
        const count = (table: string, query: Effect.Effect<ReadonlyArray<unknown>, SqlError>) =>
          have.has(table)
            ? Effect.map(Effect.flatMap(query, decodeCount), (rows) => rows[0]?.n ?? 0)
            : Effect.succeed(0)
        return yield* Effect.all({
          messages_sent: count(
            "messages",
            sql`SELECT count(*)::int AS n FROM messages m
          JOIN channels c ON c.id = m.channel_id
          WHERE m.workspace_id = ${workspaceId} AND m.direction = 'outbound' AND c.provider <> 'sandbox'
          AND m.sent_at >= ${periodStart} AND m.sent_at < ${periodEnd} AND ${Partitions.inWindow(sql, "m.id", sentIn)}`
          ),
          sandbox_messages: count(
            "messages",
            sql`SELECT count(*)::int AS n FROM messages m
          JOIN channels c ON c.id = m.channel_id
          WHERE m.workspace_id = ${workspaceId} AND m.direction = 'outbound' AND c.provider = 'sandbox'
          AND m.created_at >= ${periodStart} AND m.created_at < ${periodEnd}
          AND ${Partitions.inWindow(sql, "m.id", made)}`
          ),
          contacts: count(
            "contacts",
            // those the plan's limit counts: not a participant only group chats brought in
            sql`SELECT count(*)::int AS n FROM contacts c WHERE c.workspace_id = ${workspaceId} AND ${
              ContactCtes.counted(sql)
            }`
          ),
          connected_channels: count(
            "channels",
            sql`SELECT count(*)::int AS n FROM channels
          WHERE workspace_id = ${workspaceId} AND provider <> 'sandbox' AND status <> 'archived'`
          ),
          api_keys: count(
            "api_keys",
            sql`SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = ${workspaceId}
          AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${now})`
          ),
          seats: count(
            "workspace_members",
            sql`SELECT count(*)::int AS n FROM workspace_members WHERE workspace_id = ${workspaceId}`
          ),
          // uploaded, fetched and inbound files whose bytes are kept (pending and expired ones hold none)
          media_bytes: count(
            "media",
            sql`SELECT coalesce(sum(size_bytes), 0)::bigint AS n FROM media
          WHERE workspace_id = ${workspaceId} AND status = 'ready'`
          ),
          webhook_endpoints: count(
            "webhook_endpoints",
            sql`SELECT count(*)::int AS n FROM webhook_endpoints WHERE workspace_id = ${workspaceId}
          AND deleted_at IS NULL`
          )
        }, { concurrency: 1 })
      },
      dieOnDatabaseError
    )

    return { counts } as const
  })
}) {}
