/**
 * The sandbox network's missed-receipt sweep (`SandboxNetworkRepo.missedReceipts`, every second)
 * reads the messages still awaiting a receipt through their partial indexes on its generic plan
 * too (the pool's named statements): beside two weeks of history in the same partition, a third of
 * it never read, analyzed before the last day's messages came, that plan walked the primary key
 * over every message of the window, settled or not (docs/SCALING.md "Idle cost and history").
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Partitions, PartitionsRepo, SandboxNetworkRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, Schemas } from "@switchboard/domain"
import { Effect, Layer, TestClock } from "effect"
import * as PlanReads from "./PlanReads.js"

const DAY = 24 * 3600 * 1000
const HOUR = 3600 * 1000

const TestLayer = Layer.mergeAll(
  SandboxNetworkRepo.SandboxNetworkRepo.Default,
  PartitionsRepo.PartitionsRepo.Default
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

/** The index (or scan) each plan of each statement read `messages` with. */
const messageScans = (reads: ReadonlyArray<PlanReads.Read>) =>
  reads.flatMap((r) =>
    r.scans.map((scan) => `${r.statement.endsWith("(generic plan)") ? "generic" : "custom"}: ${scan}`)
  )

describe("The missed-receipt sweep beside history", () => {
  layer(TestLayer, { timeout: 120_000 })((it) => {
    it.effect("reads the messages awaiting a receipt by their partial indexes, not the window's primary key", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const first = (yield* Partitions.partitions("messages"))[0]!
        // the 15th of a month, in its own partition: the history of the month's first ten days and
        // the window (the sweep's bound: the messages made two or three days back) in one partition
        const t = Partitions.addMonths(Ids.idTime(first.to)!, 2) + 14 * DAY
        yield* TestClock.setTime(t)
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(t + 60 * DAY)
        const at = (ms: number) => Schemas.toTimestamp(ms)
        const month = Partitions.monthStart(t)
        const ws = Ids.idFloor("ws", month) + "0000000000000001"
        const ch = Ids.idFloor("ch", month) + "0000000000000001"
        const cnt = Ids.idFloor("cnt", month) + "0000000000000001"
        const cnv = Ids.idFloor("cnv", month) + "0000000000000001"
        yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${ws}, 'w', ${at(month)}, ${
          at(month)
        })`
        yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, phone_number, created_at, updated_at)
          VALUES (${ch}, ${ws}, 'c', 'sandbox', 'connected', '+15550100001', ${at(month)}, ${at(month)})`
        yield* sql`INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at)
          VALUES (${cnt}, ${ws}, '+4915112345678', ${at(month)}, ${at(month)})`
        yield* sql`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, created_at, updated_at)
          VALUES (${cnv}, ${ws}, ${ch}, ${cnt}, 'open', ${at(month)}, ${at(month)})`
        // `n` outbound messages of `status`, made (and last moved) `from` on, `step` ms apart; their
        // ids that time's (`tag`: 1 digit, then the message's number)
        const messages = (n: number, from: number, step: number, status: string, tag: string) =>
          sql`INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction, to_number,
              type, body, category, priority, status, metadata, created_at, updated_at)
            SELECT ${Ids.idFloor("msg", from).slice(0, 14)} || ${tag} || lpad(i::text, 11, '0'), ${ws}, ${ch}, ${cnv},
              ${cnt}, 'outbound', '+4915112345678', 'text', 'hi', 'utility', 2, ${status}, '{}'::jsonb,
              ${at(from)}::timestamptz + i * ${`${step} milliseconds`}::interval,
              ${at(from)}::timestamptz + i * ${`${step} milliseconds`}::interval
            FROM generate_series(1, ${n}) i`
        // the month's first ten days: 20,000 messages, a third never read (read receipts off), the
        // statistics taken then (autoanalyze waits for a tenth of a partition to change)
        yield* messages(6_000, month, 140_000, "delivered", "1")
        yield* messages(14_000, month, 60_000, "read", "2")
        yield* sql`ANALYZE messages`
        // the last day: 3,000 messages, settled (read), and one sent whose delivery receipt was lost
        yield* messages(3_000, t - DAY, 25_000, "read", "3")
        const stuck = `${Ids.idFloor("msg", t - 30 * 60_000)}4000000000000000`
        yield* sql`INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction, to_number,
            type, body, category, priority, status, metadata, created_at, updated_at, sent_at)
          VALUES (${stuck}, ${ws}, ${ch}, ${cnv}, ${cnt}, 'outbound', '+4915112345678', 'text', 'hi', 'utility', 2, 'sent',
            '{}'::jsonb, ${at(t - 30 * 60_000)}, ${at(t - 20 * 60_000)}, ${at(t - 20 * 60_000)})`
        yield* sql`INSERT INTO sandbox_deliveries (message_id, channel_id, to_number, offers, accepted_at, sent_at,
            delivered_at)
          VALUES (${stuck}, ${ch}, '+4915112345678', 1, ${at(t - 30 * 60_000)}, ${at(t - 29 * 60_000)},
            ${at(t - 28 * 60_000)})`

        const missed = yield* PlanReads.partitionsRead(
          (yield* SandboxNetworkRepo.SandboxNetworkRepo).missedReceipts(at(t - 10_000), at(t - HOUR), 100),
          /^messages_/
        )
        assert.deepStrictEqual(missed.result.map((r) => [r.messageId, r.stage]), [[stuck, "delivered"]])
        // as planned for its values and on its generic plan (the pool's named statements): the
        // partial indexes' ranges of the last hour, never the window's 3,001 messages by the primary
        // key; the months before the window left out (pruned when the statement starts)
        const current = Partitions.partitionName("messages", month)
        const later = (yield* Partitions.partitions("messages")).filter((p) =>
          p.from !== null && p.from >= Ids.idFloor("msg", month)
        )
        // the current month's indexes of the messages under way (`messages_in_flight`,
        // `messages_provider_accepted`, `messages_awaiting_read`: partial, of the statuses before `read`)
        const underWay = (yield* sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes
          WHERE tablename = ${current} AND indexdef LIKE '% WHERE %'
            AND indexdef ~ '(provider_accepted|delivered)'`).map((r) => r.name)
        assert.strictEqual(underWay.length, 3)
        const scans = messageScans(missed.reads).filter((scan) => scan.includes(`${current} `))
        assert.strictEqual(scans.length, 4, "both arms, both plans")
        assert.deepStrictEqual(scans.filter((scan) => !underWay.some((index) => scan.endsWith(` ${index}`))), [])
        for (const read of missed.reads) {
          const allowed = later.map((p) => p.name)
          assert.deepStrictEqual(read.partitions.filter((p) => !allowed.includes(p)), [], read.statement)
        }
      }))
  })
})
