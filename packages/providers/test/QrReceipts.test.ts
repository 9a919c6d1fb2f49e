import { assert, describe, it } from "@effect/vitest"
import { proto } from "baileys"
import { Effect } from "effect"
import type { QrConnectionEvent } from "../src/qr/QrConnectionEvent.js"
import { make, receiptsOf } from "../src/qr/QrReceipts.js"

const Status = proto.WebMessageInfo.Status
const ours = (id: string, status: number) => ({
  key: { id, fromMe: true, remoteJid: "15559990000@s.whatsapp.net" },
  update: { status }
})

/** `make`'s reporter, and the statuses it published for each message id, in order. */
const reporter = () => {
  const published: Array<QrConnectionEvent> = []
  const receipts = make({
    channelId: "chn_test",
    annotations: {},
    publish: (event) => Effect.sync(() => published.push(event)).pipe(Effect.as(true)),
    restricted: () => Effect.void
  })
  const statuses = (id: string) =>
    published.flatMap((e) => (e._tag === "receipt" && e.messageId === id ? [e.status] : []))
  return { report: receipts.report, statuses }
}

describe("QrReceipts", () => {
  it.effect("a read that Baileys folded with its delivery (one update, read only) reports delivered, then read", () =>
    Effect.gen(function*() {
      const { report, statuses } = reporter()
      yield* report([{ id: "A", status: Status.SERVER_ACK }], 1)
      yield* report(receiptsOf([ours("A", Status.READ)]), 2)
      assert.deepStrictEqual(statuses("A"), ["sent", "delivered", "read"])
    }))

  it.effect("a voice note played implies delivered and read; each status is reported once", () =>
    Effect.gen(function*() {
      const { report, statuses } = reporter()
      yield* report(receiptsOf([ours("B", Status.DELIVERY_ACK)]), 1)
      yield* report(receiptsOf([ours("B", Status.PLAYED)]), 2)
      // a late copy of the delivery, and of the read
      yield* report(receiptsOf([ours("B", Status.DELIVERY_ACK), ours("B", Status.READ)]), 3)
      assert.deepStrictEqual(statuses("B"), ["delivered", "read"])
    }))

  it.effect("a delivery alone stays a delivery", () =>
    Effect.gen(function*() {
      const { report, statuses } = reporter()
      yield* report(receiptsOf([ours("C", Status.DELIVERY_ACK)]), 1)
      assert.deepStrictEqual(statuses("C"), ["delivered"])
    }))
})
