import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { Id, isId } from "../src/Ids.js"

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
