/**
 * QR safety: the operator caps that lower the platform cap, and the
 * per-channel count a QR send is judged on. `lockChannel` then `usage` inside the send
 * transaction: concurrent sends on one QR channel count one after the other.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { dieOnDatabaseError } from "./Rows.js"

/** The caps operators set: `null` where none is set. */
export interface QrSafetyOverrides {
  readonly workspace: number | null
  readonly channel: number | null
}

export class QrSafetyRepo extends Effect.Service<QrSafetyRepo>()("@switchboard/db/QrSafetyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Holds the channel row until the transaction ends (QR channels only: 0.5 msg/s, no contention). */
    const lockChannel = Effect.fn("QrSafetyRepo.lockChannel")(function*(channelId: string) {
      yield* sql`SELECT id FROM channels WHERE id = ${channelId} FOR UPDATE`
    }, dieOnDatabaseError)

    /**
     * The channel's outbound messages handed to WhatsApp after `since` (epoch ms of `sent_at`, or
     * of `updated_at` while `provider_accepted`), and how many are not sent yet (`queued`,
     * `dispatching`).
     */
    const usage = Effect.fn("QrSafetyRepo.usage")(function*(channelId: string, since: string) {
      // ONE statement, so one snapshot: with two, a message dispatched in between (`dispatching`
      // when the handed-over ones were read, `provider_accepted` when the unsent were counted)
      // counted in neither, and a send past the cap got in
      const rows = yield* sql<{ at: Date | string | null; queued: number | null }>`
        SELECT sent_at AS at, NULL::int AS queued FROM messages
          WHERE channel_id = ${channelId} AND direction = 'outbound' AND sent_at > ${since}
        UNION ALL
        SELECT updated_at, NULL FROM messages
          WHERE channel_id = ${channelId} AND status = 'provider_accepted' AND sent_at IS NULL
            AND updated_at > ${since}
        UNION ALL
        SELECT NULL, count(*)::int FROM messages
          WHERE channel_id = ${channelId} AND status IN ('queued', 'dispatching')`
      return {
        sentAt: rows.filter((r) => r.queued === null).map((r) => new Date(r.at!).getTime()),
        queued: rows.find((r) => r.queued !== null)?.queued ?? 0
      }
    }, dieOnDatabaseError)

    /** The workspace's cap and the channel's own, as operators set them. */
    const overrides = Effect.fn("QrSafetyRepo.overrides")(function*(workspaceId: string, channelId: string | null) {
      const rows = yield* sql<{ channel_id: string | null; daily_limit: number }>`
        SELECT channel_id, daily_limit FROM qr_safety_limits
        WHERE (workspace_id = ${workspaceId} AND channel_id IS NULL)
          ${channelId === null ? sql`` : sql`OR channel_id = ${channelId}`}`
      return {
        workspace: rows.find((r) => r.channel_id === null)?.daily_limit ?? null,
        channel: rows.find((r) => r.channel_id !== null)?.daily_limit ?? null
      } satisfies QrSafetyOverrides
    }, dieOnDatabaseError)

    /** Sets the workspace's cap (`channelId` null) or the channel's. */
    const setLimit = Effect.fn("QrSafetyRepo.setLimit")(
      function*(workspaceId: string, channelId: string | null, limit: number, now: string) {
        yield* channelId === null
          ? sql`INSERT INTO qr_safety_limits (workspace_id, channel_id, daily_limit, updated_at)
              VALUES (${workspaceId}, NULL, ${limit}, ${now})
              ON CONFLICT (workspace_id) WHERE channel_id IS NULL
              DO UPDATE SET daily_limit = EXCLUDED.daily_limit, updated_at = EXCLUDED.updated_at`
          : sql`INSERT INTO qr_safety_limits (workspace_id, channel_id, daily_limit, updated_at)
              VALUES (${workspaceId}, ${channelId}, ${limit}, ${now})
              ON CONFLICT (channel_id) WHERE channel_id IS NOT NULL
              DO UPDATE SET daily_limit = EXCLUDED.daily_limit, updated_at = EXCLUDED.updated_at`
      },
      dieOnDatabaseError
    )

    /** Removes the workspace's cap (`channelId` null) or the channel's. */
    const clearLimit = Effect.fn("QrSafetyRepo.clearLimit")(
      function*(workspaceId: string, channelId: string | null) {
        yield* sql`DELETE FROM qr_safety_limits WHERE workspace_id = ${workspaceId}
          AND ${channelId === null ? sql`channel_id IS NULL` : sql`channel_id = ${channelId}`}`
      },
      dieOnDatabaseError
    )

    return { lockChannel, usage, overrides, setLimit, clearLimit } as const
  })
}) {}
