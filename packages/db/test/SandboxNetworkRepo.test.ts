import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { SandboxNetworkRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, Schemas } from "@switchboard/domain"
import { Effect, Layer, Option } from "effect"

const TestLayer = SandboxNetworkRepo.SandboxNetworkRepo.Default.pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const DELAYS = [100, 200, 300]

const offer = (messageId: string, acceptFromOffer: number | undefined, at = Date.parse("2026-01-01T00:00:00Z")) => ({
  messageId,
  channelId: "ch_network",
  to: "+4915112345678",
  at: Schemas.toTimestamp(at),
  acceptFromOffer,
  receiptDelaysMs: DELAYS
})

describe("SandboxNetworkRepo.offers", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.effect("accepts each offer of a batch on its own terms, answering in the offers' order", () =>
      Effect.gen(function*() {
        const network = yield* SandboxNetworkRepo.SandboxNetworkRepo
        const sql = yield* SqlClient.SqlClient
        const [plain, never, third, known] = yield* Effect.forEach([1, 2, 3, 4], () => Ids.newId("msg"))
        // offered before, accepted then: a repeat keeps its times
        const [before] = yield* network.offers([offer(known!, 1, Date.parse("2025-12-31T00:00:00Z"))])
        const answers = yield* network.offers([
          offer(plain!, 1),
          offer(never!, undefined),
          offer(third!, 3),
          offer(known!, 1),
          offer(third!, 3),
          offer(third!, 3)
        ])
        assert.deepStrictEqual(answers.map(Option.isSome), [true, false, false, true, false, true])
        const accepted = answers[0]!.pipe(Option.getOrThrow)
        assert.deepStrictEqual(
          [accepted.acceptedAt, accepted.sentAt, accepted.deliveredAt, accepted.readAt],
          [
            "2026-01-01T00:00:00.000Z",
            "2026-01-01T00:00:00.100Z",
            "2026-01-01T00:00:00.200Z",
            "2026-01-01T00:00:00.300Z"
          ]
        )
        const times = (d: Option.Option<SandboxNetworkRepo.NetworkDelivery>) =>
          Option.map(d, ({ acceptedAt, deliveredAt, readAt, sentAt }) => [acceptedAt, sentAt, deliveredAt, readAt])
        assert.deepStrictEqual(times(answers[3]!), times(before!), "accepted once, its times never change")
        assert.strictEqual(answers[3]!.pipe(Option.getOrThrow).offers, 2)
        assert.strictEqual(answers[5]!.pipe(Option.getOrThrow).acceptedAt, "2026-01-01T00:00:00.000Z")
        const rows = yield* sql<{ message_id: string; offers: number; accepted: boolean }>`
          SELECT message_id, offers, accepted_at IS NOT NULL AS accepted FROM sandbox_deliveries
          WHERE message_id IN ${sql.in([plain!, never!, third!, known!])} ORDER BY message_id`
        assert.deepStrictEqual(
          Object.fromEntries(rows.map((r) => [r.message_id, [r.offers, r.accepted]])),
          { [plain!]: [1, true], [never!]: [1, false], [third!]: [3, true], [known!]: [2, true] },
          "every offer counted, a message offered three times in one batch three times"
        )
        // a refused message offered again later, in a batch of its own
        const [again] = yield* network.offers([offer(never!, undefined)])
        assert.isTrue(Option.isNone(again!))
      }))
  })
})
