import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import { decodeTime } from "ulid"
import { Id, isId, newId } from "../src/Ids.js"

describe("isId", () => {
  const isMessageId = isId("msg")

  it("accepts exactly what the kind's schema accepts: its prefix and 26 ULID characters", () => {
    const samples = [
      "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z",
      "msg_01jd7x6f3q9t2m5n8r4v0w1y2z",
      "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2",
      "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2ZZ",
      "cnt_01JD7X6F3Q9T2M5N8R4V0W1Y2Z",
      "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2U",
      "msg_backlog",
      "3EB0C4A5F1D2B7E8",
      ""
    ]
    expect(samples.map(isMessageId)).toEqual(samples.map(Schema.is(Id("msg"))))
    expect(samples.filter(isMessageId)).toEqual(["msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"])
  })
})

describe("newId", () => {
  const timeOf = (id: string) => decodeTime(id.slice(id.indexOf("_") + 1))

  it.effect("keeps ids in order across a small step back of the clock, and follows the clock after a far one", () =>
    Effect.gen(function*() {
      const now = Date.UTC(2026, 10, 29, 12)
      // a clock moved 100 days ahead (a test's), then the real time again: ids go on from the clock,
      // not from 100 days ahead (they would land in a month of the history tables not made yet)
      yield* TestClock.setTime(now + 100 * 24 * 3600 * 1000)
      yield* newId("msg")
      yield* TestClock.setTime(now)
      const back = yield* newId("msg")
      expect(timeOf(back)).toBe(now)
      // a step back of 30 s: the order of ids is kept (the later id sorts after)
      yield* TestClock.setTime(now - 30_000)
      const after = yield* newId("msg")
      expect(after > back).toBe(true)
      expect(timeOf(after)).toBe(now)
    }))
})
