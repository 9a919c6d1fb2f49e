/**
 * The simulated network's durable memory: one row per message id ever offered to it, written at
 * each offer by one guarded statement (shared by the offers of a runner's channels), so two
 * connections offering the same message (a duplicate dispatch, a failover) still accept and
 * deliver it once. Accepting a message fixes the
 * times of its receipts (`sent_at`, `delivered_at`, `read_at`: acceptance plus the network's
 * delays), so reporting them writes nothing, and every report of a stage, from any connection,
 * carries the same time.
 */
import { SqlClient } from "@effect/sql"
import { MessageStateMachine } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import * as GroupCommit from "./GroupCommit.js"
import * as Partitions from "./Partitions.js"
import { decodeRows, dieOnDatabaseError, iso, isoOrNull, TimestampColumn } from "./Rows.js"

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

/** One offer of a message to the network. */
export interface Offer {
  readonly messageId: string
  readonly channelId: string
  readonly to: string
  /** when it is offered (a timestamp) */
  readonly at: string
  /** accepted from this offer on (counting this one); never when undefined */
  readonly acceptFromOffer: number | undefined
  /** sent, delivered, read after acceptance (fewer: the message stops early) */
  readonly receiptDelaysMs: ReadonlyArray<number>
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

const decodeDeliveries = decodeRows(DeliveryColumns)
/** What an offer reads back: the row, not accepted yet (`accepted_at` null) while offers are refused. */
const decodeOffered = decodeRows(
  Schema.Struct({ ...DeliveryColumns.fields, accepted_at: Schema.NullOr(TimestampColumn) })
)
/** A message short of `read` with the receipt times the network fixed for it. */
const decodeMissed = decodeRows(Schema.Struct({
  message_id: Schema.String,
  status: MessageStateMachine.MessageStatus,
  sent_at: Schema.NullOr(TimestampColumn),
  delivered_at: Schema.NullOr(TimestampColumn),
  read_at: Schema.NullOr(TimestampColumn)
}))

/** A decoded row as the network step's delivery (times as ISO strings). */
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
     * Counts one more offer of each message and accepts it from its `acceptFromOffer`-th offer on
     * (never, when undefined), in one statement for the whole batch (a runner's channels share it,
     * `SandboxProvider`); acceptance fixes the receipts' times at acceptance + `receiptDelaysMs`
     * (sent, delivered, read: fewer for a recipient whose message stops early). Answers, per
     * offer and in their order, the delivery once accepted, now or before (it is never accepted
     * twice, its times never change), or none while it is refused. A message offered twice in one
     * batch is counted twice: its second offer goes in a statement after the first.
     */
    const offers = Effect.fn("SandboxNetworkRepo.offers")(function*(batch: ReadonlyArray<Offer>) {
      const answers = new Array<Option.Option<NetworkDelivery>>(batch.length)
      for (const round of GroupCommit.rounds(batch, (o) => o.messageId)) {
        const input = round.map((i) => batch[i]!)
        const delay = (n: 0 | 1 | 2) => input.map((o) => o.receiptDelaysMs[n] ?? null)
        // a conflict (an offer again: a duplicate dispatch, a failover, a magic number's retry)
        // takes its own inputs from `input`: EXCLUDED carries only the columns of the insert
        const rows = yield* decodeOffered(
          yield* sql`WITH input AS (
            SELECT * FROM unnest(${input.map((o) => o.messageId)}::text[], ${input.map((o) => o.channelId)}::text[],
              ${input.map((o) => o.to)}::text[], ${input.map((o) => o.at)}::timestamptz[],
              ${input.map((o) => o.acceptFromOffer ?? null)}::int[], ${delay(0)}::int[], ${delay(1)}::int[],
              ${delay(2)}::int[])
              AS i(message_id, channel_id, to_number, at, from_offer, sent_ms, delivered_ms, read_ms)
          )
          INSERT INTO sandbox_deliveries AS d (message_id, channel_id, to_number, offers, accepted_at, sent_at,
            delivered_at, read_at)
          SELECT message_id, channel_id, to_number, 1, CASE WHEN 1 >= from_offer THEN at END,
            CASE WHEN 1 >= from_offer THEN at + sent_ms * interval '1 millisecond' END,
            CASE WHEN 1 >= from_offer THEN at + delivered_ms * interval '1 millisecond' END,
            CASE WHEN 1 >= from_offer THEN at + read_ms * interval '1 millisecond' END
          FROM input ORDER BY message_id
          ON CONFLICT (message_id) DO UPDATE SET offers = d.offers + 1,
            (accepted_at, sent_at, delivered_at, read_at) = (
              SELECT CASE WHEN d.accepted_at IS NOT NULL THEN d.accepted_at WHEN d.offers + 1 >= i.from_offer THEN i.at END,
                CASE WHEN d.accepted_at IS NOT NULL THEN d.sent_at
                  WHEN d.offers + 1 >= i.from_offer THEN i.at + i.sent_ms * interval '1 millisecond' END,
                CASE WHEN d.accepted_at IS NOT NULL THEN d.delivered_at
                  WHEN d.offers + 1 >= i.from_offer THEN i.at + i.delivered_ms * interval '1 millisecond' END,
                CASE WHEN d.accepted_at IS NOT NULL THEN d.read_at
                  WHEN d.offers + 1 >= i.from_offer THEN i.at + i.read_ms * interval '1 millisecond' END
              FROM input i WHERE i.message_id = d.message_id)
          RETURNING d.*`
        )
        const byId = new Map(rows.map((r) => [r.message_id, r]))
        for (const i of round) {
          const row = byId.get(batch[i]!.messageId)!
          const acceptedAt = row.accepted_at
          answers[i] = acceptedAt === null
            ? Option.none()
            : Option.some(toDelivery({ ...row, accepted_at: acceptedAt }))
        }
      }
      return answers
    }, dieOnDatabaseError)

    /**
     * A channel's messages accepted after `since` (a reconnecting connection reports their receipts
     * again: those of a connection that went away may not have been heard).
     */
    const unfinished = Effect.fn("SandboxNetworkRepo.unfinished")(function*(channelId: string, since: string) {
      const rows = yield* decodeDeliveries(
        yield* sql`SELECT * FROM sandbox_deliveries
        WHERE channel_id = ${channelId} AND accepted_at IS NOT NULL AND accepted_at > ${since}
        ORDER BY accepted_at`
      )
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
      // The lateral `OFFSET 0` keeps it so whatever the statistics say: with `messages` last
      // analyzed during a bulk load the planner went back to the deliveries (4,435 pages a call at
      // 1M rows, 11g).
      // Only the months of messages the network could have sent after `notBefore` (a row needs
      // its delivery's `sent_at` after it): a message is handed to the network within a day of
      // being made (it expires then) and the network's receipt delays are seconds; a day of slack
      // more (`Partitions.idsFrom`)
      const made = (column: string) =>
        Partitions.idsFrom(sql, "msg", column, Date.parse(notBefore) - MessageStateMachine.QUEUED_EXPIRY_MS)
      // `notBefore` to the day as a constant beside it (`Partitions.timeBound`): on the generic
      // plan (the pool's named statements) the planner knows `updated_at > $1` only as a third of
      // `messages_awaiting_read`, which holds every message never read (read receipts off), and
      // walked the window's primary key instead, every message made in the last two or three
      // days, settled or not (ReceiptSweepHistory.test.ts); with it, the index's range from the
      // statistics (docs/SCALING.md "Idle cost and history")
      const moved = Partitions.timeBound(sql, Partitions.dayFloor(Date.parse(notBefore)))
      const rows = yield* decodeMissed(
        yield* sql`SELECT m.id AS message_id, m.status, d.sent_at, d.delivered_at, d.read_at
        FROM (
          SELECT id, status FROM messages WHERE status = 'provider_accepted' AND updated_at > ${notBefore}
            AND updated_at >= ${moved} AND ${made("id")}
          UNION ALL
          SELECT id, status FROM messages
            WHERE direction = 'outbound' AND status IN ('sent', 'delivered') AND updated_at > ${notBefore}
              AND updated_at >= ${moved} AND ${made("id")}
        ) m CROSS JOIN LATERAL (
          SELECT sent_at, delivered_at, read_at FROM sandbox_deliveries WHERE message_id = m.id OFFSET 0
        ) d
        WHERE d.sent_at < ${cutoff} AND d.sent_at > ${notBefore}
          AND ((d.read_at IS NOT NULL AND d.read_at < ${cutoff} AND m.status IN ('provider_accepted', 'sent', 'delivered'))
            OR (d.delivered_at IS NOT NULL AND d.delivered_at < ${cutoff} AND m.status IN ('provider_accepted', 'sent'))
            OR m.status = 'provider_accepted')
        LIMIT ${limit}`
      )
      const order = ["dispatching", "provider_accepted", "sent", "delivered", "read"]
      return rows.flatMap((r) =>
        ([["sent", r.sent_at], ["delivered", r.delivered_at], ["read", r.read_at]] as const)
          .filter(([stage, at]) =>
            at !== null && new Date(at).toISOString() < cutoff && order.indexOf(stage) > order.indexOf(r.status)
          )
          .map(([stage, at]) => ({ messageId: r.message_id, stage, at: new Date(at!).getTime() }))
      )
    }, dieOnDatabaseError)

    return { offers, unfinished, missedReceipts } as const
  })
}) {}
