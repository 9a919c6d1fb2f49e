import { assert, describe, it } from "@effect/vitest"
import { classifyAckError } from "../src/qr/QrRestrictions.js"

describe("classifyAckError", () => {
  it("fails a 463 for good as account_restricted and restricts the channel (a retry is another reach-out)", () => {
    const r = classifyAckError("463")
    assert.deepStrictEqual([r.code, r.retryable, r.channelReason], ["account_restricted", false, "account_restricted"])
  })

  it("retries a 429 as PROVIDER_RATE_LIMITED and marks the channel rate_limited", () => {
    const r = classifyAckError("429")
    assert.deepStrictEqual([r.code, r.retryable, r.channelReason], ["PROVIDER_RATE_LIMITED", true, "rate_limited"])
  })

  it("retries a 479 (stale session) without touching the channel", () => {
    const r = classifyAckError("479")
    assert.deepStrictEqual([r.code, r.retryable, r.channelReason], ["provider_rejected", true, null])
  })

  it("fails any other error as provider_rejected, naming a numeric code and never echoing anything else", () => {
    assert.include(classifyAckError("500").reason, "error 500")
    const odd = classifyAckError("<script>")
    assert.deepStrictEqual([odd.code, odd.retryable], ["provider_rejected", false])
    assert.notInclude(odd.reason, "<script>")
  })
})
