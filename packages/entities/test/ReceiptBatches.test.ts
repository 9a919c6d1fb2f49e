/**
 * The runner's receipt writer (`ReceiptBatches`) on the TestClock: what several channels report
 * within the window goes in one statement, nothing is given up when a statement fails, and each
 * receipt's `done` runs only once it is recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { MessageMoves, ReceiptBatches } from "@switchboard/entities"
import { Duration, Effect, TestClock } from "effect"

type Receipt = MessageMoves.Receipt

const receipt = (messageId: string, status: Receipt["status"] = "sent", at = 1_000): Receipt => ({
  messageId,
  status,
  at
})

/** Lets the writer's fiber run until it waits (on the queue or the clock) again. */
const settle = Effect.repeatN(Effect.yieldNow(), 50)

describe("ReceiptBatches", () => {
  it.scoped("writes what arrives within 10 ms of the first receipt in one statement, in order", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<string>> = []
      const done: Array<string> = []
      const submit = yield* ReceiptBatches.make((batch) =>
        Effect.sync(() => writes.push(batch.map((r) => `${r.messageId}:${r.status}`)))
      )
      const report = (r: Receipt) => submit(r, Effect.sync(() => done.push(r.messageId)))
      // three channels' receipts, 9 ms apart at most: one statement
      yield* report(receipt("msg_a"))
      yield* settle
      yield* TestClock.adjust("4 millis")
      yield* report(receipt("msg_b"))
      yield* report(receipt("msg_a", "delivered"))
      yield* TestClock.adjust("5 millis")
      yield* report(receipt("msg_c"))
      yield* settle
      assert.deepStrictEqual(writes, [], "nothing written before the window closes")
      assert.deepStrictEqual(done, [])
      yield* TestClock.adjust("1 millis")
      yield* settle
      assert.deepStrictEqual(writes, [["msg_a:sent", "msg_b:sent", "msg_a:delivered", "msg_c:sent"]])
      assert.deepStrictEqual(done, ["msg_a", "msg_b", "msg_a", "msg_c"])
      // the next receipt opens a window of its own
      yield* report(receipt("msg_d"))
      yield* settle
      yield* TestClock.adjust("10 millis")
      yield* settle
      assert.deepStrictEqual(writes.slice(1), [["msg_d:sent"]])
    }))

  it.scoped("keeps trying a statement that failed, and what arrived meanwhile follows it in order", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<string>> = []
      const done: Array<string> = []
      let failures = 2
      const submit = yield* ReceiptBatches.make((batch) =>
        Effect.suspend(() => {
          if (failures-- > 0) return Effect.die(new Error("connection terminated"))
          writes.push(batch.map((r) => r.messageId))
          return Effect.void
        })
      )
      const report = (r: Receipt) => submit(r, Effect.sync(() => done.push(r.messageId)))
      yield* report(receipt("msg_a"))
      yield* settle
      yield* TestClock.adjust("10 millis")
      yield* settle
      // the first attempt failed; a receipt arrives while the writer waits to try again
      yield* report(receipt("msg_b"))
      yield* settle
      assert.deepStrictEqual(writes, [], "the first attempt failed")
      assert.deepStrictEqual(done, [], "a receipt not recorded is not done")
      // the writer keeps trying on the runner's backoff (jittered, so no attempt has a fixed time):
      // the failed statement goes first, whole, and what arrived meanwhile follows it
      for (let step = 0; step < 100 && writes.length < 2; step++) {
        yield* TestClock.adjust("100 millis")
        yield* settle
      }
      assert.deepStrictEqual(writes, [["msg_a"], ["msg_b"]])
      assert.deepStrictEqual(done, ["msg_a", "msg_b"])
    }))

  it.scoped("drops a receipt with no valid time (done at once) instead of holding up the rest", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<string>> = []
      const done: Array<string> = []
      const submit = yield* ReceiptBatches.make((batch) =>
        Effect.sync(() => writes.push(batch.map((r) => r.messageId)))
      )
      const report = (r: Receipt) => submit(r, Effect.sync(() => done.push(r.messageId)))
      yield* report(receipt("msg_bad", "sent", Number.NaN))
      yield* report(receipt("msg_ok"))
      assert.deepStrictEqual(done, ["msg_bad"])
      yield* settle
      yield* TestClock.adjust("10 millis")
      yield* settle
      assert.deepStrictEqual(writes, [["msg_ok"]])
      assert.deepStrictEqual(done, ["msg_bad", "msg_ok"])
    }))

  it.scoped("writes at once when the window is zero", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<string>> = []
      const submit = yield* ReceiptBatches.make((batch) =>
        Effect.sync(() => writes.push(batch.map((r) => r.messageId)))
      ).pipe(Effect.provideService(ReceiptBatches.ReceiptWindow, Duration.zero))
      yield* submit(receipt("msg_a"), Effect.void)
      yield* settle
      assert.deepStrictEqual(writes, [["msg_a"]])
    }))
})
