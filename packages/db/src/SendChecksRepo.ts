import { SqlClient } from "@effect/sql"
import { Plans } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { ChannelRow } from "./ChannelsRepo.js"
import { dieOnDatabaseError } from "./Rows.js"

const decodeChannel = Schema.decodeUnknown(ChannelRow)

/** The facts read beside the channel's columns (the same row; the channel's are `ChannelRow`'s). */
const decodeFacts = Schema.decodeUnknown(Schema.Struct({
  sandbox_usable: Schema.Boolean,
  recipient_verified: Schema.Boolean,
  queued: Schema.Number,
  plan: Plans.PlanName,
  overrides: Schema.Record({ key: Schema.String, value: Plans.EntitlementValue })
}))

/** What the send path checks about a channel before it writes anything. */
export interface SendFacts {
  readonly row: ChannelRow
  /** a sandbox channel's session is active and not past its expiry (false for other providers) */
  readonly sandboxUsable: boolean
  /** the recipient is verified for the sandbox channel's session (false for other providers) */
  readonly recipientVerified: boolean
  /** messages waiting on the channel (the striped counter of migration 0044) */
  readonly queued: number
  /** the workspace's plan and its entitlement overrides: what the send's quota and contacts limit resolve from */
  readonly plan: Plans.PlanName
  readonly overrides: ReadonlyMap<string, Plans.EntitlementValue>
}

/**
 * Every fact a send is refused on, read in ONE statement: the channel (named, or the workspace's
 * default), its sandbox session's state, the recipient's verification, the channel's backlog and
 * the workspace's plan with its entitlement overrides (the monthly quota and the contacts limit).
 * Four reads were four round trips of the send path before; each one through the SQL client costs
 * more CPU on the api node than the query does on the database (bench/RESULTS.md, the send path).
 */
export class SendChecksRepo extends Effect.Service<SendChecksRepo>()("@switchboard/db/SendChecksRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const facts = Effect.fn("SendChecksRepo.facts")(function*(input: {
      readonly workspaceId: string
      /** undefined: the workspace's default channel */
      readonly channelId: string | undefined
      readonly to: string
      readonly now: string
    }) {
      // the channel's columns decoded by `ChannelRow`, the facts beside them by their own schema
      const rows = yield* sql`SELECT c.*,
          (c.provider = 'sandbox' AND EXISTS (SELECT 1 FROM sandbox_sessions s WHERE s.channel_id = c.id
            AND s.status = 'active' AND s.expires_at > ${input.now})) AS sandbox_usable,
          (c.provider = 'sandbox' AND EXISTS (SELECT 1 FROM sandbox_recipients r
            JOIN sandbox_sessions s ON s.id = r.session_id
            WHERE s.channel_id = c.id AND r.phone_number = ${input.to})) AS recipient_verified,
          (SELECT COALESCE(sum(q.queued), 0)::int FROM channel_queue_counts q WHERE q.channel_id = c.id) AS queued,
          (SELECT w.plan FROM workspaces w WHERE w.id = c.workspace_id) AS plan,
          (SELECT COALESCE(jsonb_object_agg(o.entitlement, o.value), '{}'::jsonb) FROM entitlement_overrides o
            WHERE o.workspace_id = c.workspace_id) AS overrides
        FROM channels c
        WHERE c.workspace_id = ${input.workspaceId}
          AND ${
        input.channelId === undefined ? sql`c.is_default AND c.archived_at IS NULL` : sql`c.id = ${input.channelId}`
      }`
      if (rows[0] === undefined) return Option.none<SendFacts>()
      const r = yield* decodeFacts(rows[0])
      return Option.some<SendFacts>({
        row: yield* decodeChannel(rows[0]),
        sandboxUsable: r.sandbox_usable,
        recipientVerified: r.recipient_verified,
        queued: r.queued,
        plan: r.plan,
        overrides: new Map(Object.entries(r.overrides))
      })
    }, dieOnDatabaseError)

    return { facts } as const
  })
}) {}
