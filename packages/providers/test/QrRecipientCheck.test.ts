import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { makeRecipientCheck, NOT_FOUND_TTL_MS } from "../src/qr/QrRecipientCheck.js"

describe("QrRecipientCheck", () => {
  it.effect("asks WhatsApp once per number and remembers a number that is on WhatsApp", () =>
    Effect.gen(function*() {
      const check = makeRecipientCheck()
      const asked: Array<string> = []
      const ask = async (jid: string) => {
        asked.push(jid)
        return [{ exists: true }]
      }
      assert.isTrue(yield* check.exists("1@s.whatsapp.net", ask))
      yield* TestClock.adjust(NOT_FOUND_TTL_MS * 3)
      assert.isTrue(yield* check.exists("1@s.whatsapp.net", ask))
      assert.deepStrictEqual(asked, ["1@s.whatsapp.net"])
      assert.deepStrictEqual(check.stats(), { asked: 1, remembered: 1 })
    }))

  it.effect("trusts a 'not on WhatsApp' for a day, then asks again (people join)", () =>
    Effect.gen(function*() {
      const check = makeRecipientCheck()
      let exists = false
      let asked = 0
      const ask = async () => {
        asked++
        return exists ? [{ exists: true }] : []
      }
      assert.isFalse(yield* check.exists("2@s.whatsapp.net", ask))
      yield* TestClock.adjust(NOT_FOUND_TTL_MS - 1)
      assert.isFalse(yield* check.exists("2@s.whatsapp.net", ask))
      assert.strictEqual(asked, 1)
      exists = true
      yield* TestClock.adjust(1)
      assert.isTrue(yield* check.exists("2@s.whatsapp.net", ask))
      assert.strictEqual(asked, 2)
    }))

  it.effect("fails when the query fails, and remembers nothing", () =>
    Effect.gen(function*() {
      const check = makeRecipientCheck()
      const failing = () => Promise.reject(new Error("rate-overlimit"))
      const error = yield* Effect.flip(check.exists("3@s.whatsapp.net", failing))
      assert.include(String(error), "rate-overlimit")
      assert.isTrue(yield* check.exists("3@s.whatsapp.net", async () => [{ exists: true }]))
    }))
})
