import { assert, describe, it } from "@effect/vitest"
import { cappingSignal, classifyAckError, timelockSignal } from "../src/qr/QrRestrictions.js"

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

describe("timelockSignal", () => {
  const NOW = Date.UTC(2026, 10, 26, 12)

  it("pauses new chats until the timelock's end and names it on the channel", () => {
    const ends = new Date(NOW + 3_600_000)
    assert.deepStrictEqual(timelockSignal({ isActive: true, timeEnforcementEnds: ends }, NOW), {
      until: ends.getTime(),
      channelReason: "reachout_timelocked"
    })
  })

  it("pauses a minute when WhatsApp gives no end, as WhatsApp Web does", () => {
    assert.deepStrictEqual(timelockSignal({ isActive: true }, NOW), {
      until: NOW + 60_000,
      channelReason: "reachout_timelocked"
    })
  })

  it("lifts an inactive or already ended timelock, and ignores what it cannot read", () => {
    const lifted = { until: null, channelReason: "restriction_lifted" } as const
    assert.deepStrictEqual(timelockSignal({ isActive: false }, NOW), lifted)
    assert.deepStrictEqual(timelockSignal({ isActive: true, timeEnforcementEnds: new Date(NOW - 1) }, NOW), lifted)
    assert.isUndefined(timelockSignal({ isActive: "yes" }, NOW))
  })
})

describe("cappingSignal", () => {
  it("records the quota and caps new chats once it is used up", () => {
    assert.deepStrictEqual(
      cappingSignal({ total_quota: 50, used_quota: 50, cycle_end_timestamp: "1795000000", capping_status: "CAPPED" }),
      { total: 50, used: 50, cycleEndsAt: 1_795_000_000_000, channelReason: "new_chats_capped" }
    )
    assert.deepStrictEqual(cappingSignal({ total_quota: 50, used_quota: 10, capping_status: "FIRST_WARNING" }), {
      total: 50,
      used: 10,
      cycleEndsAt: null,
      channelReason: null
    })
  })

  it("ignores a report without numbers", () => {
    assert.isUndefined(cappingSignal({ capping_status: "CAPPED" }))
    assert.isUndefined(cappingSignal("nonsense"))
  })
})
