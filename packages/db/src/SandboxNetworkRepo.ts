/**
 * The simulated network's durable memory: one row per message id ever offered to it, written
 * once per offer by one guarded statement, so two connections offering the same message (a
 * duplicate dispatch, a failover) still accept and deliver it once. Accepting a message fixes the
 * times of its receipts (`sent_at`, `delivered_at`, `read_at`: acceptance plus the network's
 * delays), so reporting them writes nothing, and every report of a stage, from any connection,
 * carries the same time.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnDatabaseError, iso, isoOrNull, TimestampColumn } from "./Rows.js"

export type NetworkStage = "sent" | "delivered" | "read"

export interface NetworkDelivery {
  readonly messageId: string
  readonly offers: number
  readonly to: string
  readonly acceptedAt: string
  readonly sentAt: string | null
  readonly deliveredAt: string | null
  readonly readAt: string | null
}

/** A row of `sandbox_deliveries` (one a network step reads back, `accepted_at` set). */
const DeliveryColumns = Schema.Struct({
  message_id: Schema.String,
  offers: Schema.Number,
  to_number: Schema.String,
  accepted_at: TimestampColumn,
  sent_at: Schema.NullOr(TimestampColumn),
  delivered_at: Schema.NullOr(TimestampColumn),
  read_at: Schema.NullOr(TimestampColumn)
})

/** Typed, not decoded: our own rows, read at every step of the simulated network. */
const toDelivery = (r: typeof DeliveryColumns.Type): NetworkDelivery => ({
  messageId: r.message_id,
  offers: r.offers,
  to: r.to_number,
  acceptedAt: iso(r.accepted_at),
  sentAt: isoOrNull(r.sent_at),
  deliveredAt: isoOrNull(r.delivered_at),
  readAt: isoOrNull(r.read_at)
})

export class SandboxNetworkRepo extends Effect.Service<SandboxNetworkRepo>()("@switchboard/db/SandboxNetworkRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Counts one more offer of the message and accepts it from its `acceptFromOffer`-th offer on
     * (never, when undefined), in one statement; acceptance fixes the receipts' times at
     * acceptance + `receiptDelaysMs` (sent, delivered, read: fewer for a recipient whose message
     * stops early). Answers the delivery once accepted, now or before (it is never accepted
     * twice, its times never change), or none while it is refused.
     */
    const offer = Effect.fn("SandboxNetworkRepo.offer")(function*(input: {
      readonly messageId: string
      readonly channelId: string
      readonly to: string
      readonly at: string
      readonly acceptFromOffer: number | undefined
      readonly receiptDelaysMs: ReadonlyArray<number>
    }) {
      const from = input.acceptFromOffer ?? null
      const [sent, delivered, read] = [0, 1, 2].map((i) => input.receiptDelaysMs[i] ?? null)
      const at = sql`${input.at}::timestamptz`
      const after = (ms: number | null) => sql`${input.at}::timestamptz + ${ms}::int * interval '1 millisecond'`
      const rows = yield* sql<typeof DeliveryColumns.Type>`
        INSERT INTO sandbox_deliveries AS d (message_id, channel_id, to_number, offers, accepted_at, sent_at, delivered_at,
          read_at)
        VALUES (${input.messageId}, ${input.channelId}, ${input.to}, 1,
          CASE WHEN 1 >= ${from}::int THEN ${at} END, CASE WHEN 1 >= ${from}::int THEN ${after(sent)} END,
          CASE WHEN 1 >= ${from}::int THEN ${after(delivered)} END, CASE WHEN 1 >= ${from}::int THEN ${after(read)} END)
        ON CONFLICT (message_id) DO UPDATE SET offers = d.offers + 1,
          accepted_at = COALESCE(d.accepted_at, CASE WHEN d.offers + 1 >= ${from}::int THEN ${at} END),
          sent_at = CASE WHEN d.accepted_at IS NULL AND d.offers + 1 >= ${from}::int THEN ${
        after(sent)
      } ELSE d.sent_at END,
          delivered_at = CASE WHEN d.accepted_at IS NULL AND d.offers + 1 >= ${from}::int THEN ${after(delivered)}
            ELSE d.delivered_at END,
          read_at = CASE WHEN d.accepted_at IS NULL AND d.offers + 1 >= ${from}::int THEN ${
        after(read)
      } ELSE d.read_at END
        RETURNING d.*`
      const row = rows[0]!
      return row.accepted_at === null ? Option.none<NetworkDelivery>() : Option.some(toDelivery(row))
    }, dieOnDatabaseError)

    /**
     * A channel's messages accepted after `since` (a reconnecting connection reports their receipts
     * again: those of a connection that went away may not have been heard).
     */
    const unfinished = Effect.fn("SandboxNetworkRepo.unfinished")(function*(channelId: string, since: string) {
      const rows = yield* sql<typeof DeliveryColumns.Type>`SELECT * FROM sandbox_deliveries
        WHERE channel_id = ${channelId} AND accepted_at IS NOT NULL AND accepted_at > ${since}
        ORDER BY accepted_at`
      return rows.map(toDelivery)
    }, dieOnDatabaseError)

    /**
     * Receipts the network reported before `cutoff` that the message has not recorded (the report
     * was lost with a runner): one row per missing stage, in stage order. Messages still
     * `dispatching` are left to the stuck-dispatch path (re-dispatch, de-duplicated by the network).
     */
    const missedReceipts = Effect.fn("SandboxNetworkRepo.missedReceipts")(function*(
      cutoff: string,
      /**
       * reports, and messages last moved, before this are not looked at any more (the sweep stays an
       * index range, not a scan of history)
       */
      notBefore: string,
      limit: number
    ) {
      // Driven by the messages still short of `read` (the partial indexes `messages_in_flight` and
      // `messages_awaiting_read`), each looked up in the network's deliveries: one row per message
      // awaiting a receipt. Driven by the deliveries, it read every delivery of the last hour each
      // second, settled or not (bench/RESULTS.md 11 "What grew"): a cost that grew with the traffic.
      const rows = yield* sql<
        { message_id: string; status: string; sent_at: Date | null; delivered_at: Date | null; read_at: Date | null }
      >`
        SELECT d.message_id, m.status, d.sent_at, d.delivered_at, d.read_at
        FROM (
          SELECT id, status FROM messages WHERE status = 'provider_accepted' AND updated_at > ${notBefore}
          UNION ALL
          SELECT id, status FROM messages
            WHERE direction = 'outbound' AND status IN ('sent', 'delivered') AND updated_at > ${notBefore}
        ) m JOIN sandbox_deliveries d ON d.message_id = m.id
        WHERE d.sent_at < ${cutoff} AND d.sent_at > ${notBefore}
          AND ((d.read_at IS NOT NULL AND d.read_at < ${cutoff} AND m.status IN ('provider_accepted', 'sent', 'delivered'))
            OR (d.delivered_at IS NOT NULL AND d.delivered_at < ${cutoff} AND m.status IN ('provider_accepted', 'sent'))
            OR m.status = 'provider_accepted')
        LIMIT ${limit}`
      const order = ["dispatching", "provider_accepted", "sent", "delivered", "read"]
      return rows.flatMap((r) =>
        ([["sent", r.sent_at], ["delivered", r.delivered_at], ["read", r.read_at]] as const)
          .filter(([stage, at]) =>
            at !== null && new Date(at).toISOString() < cutoff && order.indexOf(stage) > order.indexOf(r.status)
          )
          .map(([stage, at]) => ({ messageId: r.message_id, stage, at: new Date(at!).getTime() }))
      )
    }, dieOnDatabaseError)

    return { offer, unfinished, missedReceipts } as const
  })
}) {}
