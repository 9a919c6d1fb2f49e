import { describe, expect, it } from "@effect/vitest"
import {
  afterFailedAttempt,
  clientStatusSources,
  DISABLE_AFTER_FAILURES,
  MAX_ATTEMPTS,
  nextDeliveryState
} from "../src/Webhooks.js"

describe("clientStatusSources", () => {
  it("lets a client move an endpoint between active and paused, and a disabled one back to active only", () => {
    expect(clientStatusSources("active")).toEqual(["active", "paused", "disabled"])
    expect(clientStatusSources("paused")).toEqual(["active", "paused"])
  })
})

describe("nextDeliveryState", () => {
  const now = 1_800_000_000_000

  it("ends a delivery whose attempt was answered 2xx succeeded, whatever the attempt", () => {
    expect(nextDeliveryState("ok", 1, now, 0.5)).toEqual({ status: "succeeded", nextAttemptAt: null })
    expect(nextDeliveryState("ok", MAX_ATTEMPTS, now, 0.5)).toEqual({ status: "succeeded", nextAttemptAt: null })
  })

  it("retries a retryable failure after 5-10 s, doubling per attempt, and the random share picks within", () => {
    expect(nextDeliveryState("server_error", 1, now, 0)).toEqual({ status: "pending", nextAttemptAt: now + 5_000 })
    expect(nextDeliveryState("server_error", 1, now, 0.999).nextAttemptAt).toBe(now + 9_995)
    expect(nextDeliveryState("timeout", 2, now, 0)).toEqual({ status: "pending", nextAttemptAt: now + 10_000 })
    expect(nextDeliveryState("rate_limited", 3, now, 0.5)).toEqual({ status: "pending", nextAttemptAt: now + 30_000 })
    expect(nextDeliveryState("network_error", 5, now, 1 - Number.EPSILON).nextAttemptAt).toBe(now + 160_000)
    // tests shorten the schedule
    expect(nextDeliveryState("server_error", 1, now, 0, 0.001).nextAttemptAt).toBe(now + 5)
  })

  it("gives a retryable failure on the last attempt up as dead", () => {
    expect(nextDeliveryState("server_error", MAX_ATTEMPTS - 1, now, 0).status).toBe("pending")
    expect(nextDeliveryState("server_error", MAX_ATTEMPTS, now, 0)).toEqual({ status: "dead", nextAttemptAt: null })
  })

  it("fails a delivery at once on a reason a retry cannot fix", () => {
    for (const reason of ["client_error", "redirect", "blocked_target", "not_deliverable"] as const) {
      expect(nextDeliveryState(reason, 1, now, 0.5)).toEqual({ status: "failed", nextAttemptAt: null })
    }
  })
})

describe("afterFailedAttempt", () => {
  it("counts a failure of an active endpoint and disables it at the 20th in a row, not before", () => {
    expect(DISABLE_AFTER_FAILURES).toBe(20)
    expect(afterFailedAttempt({ status: "active", consecutive_failures: 0 })).toEqual({
      status: "active",
      consecutive_failures: 1
    })
    expect(afterFailedAttempt({ status: "active", consecutive_failures: 18 })).toEqual({
      status: "active",
      consecutive_failures: 19
    })
    expect(afterFailedAttempt({ status: "active", consecutive_failures: 19 })).toEqual({
      status: "disabled",
      consecutive_failures: 20
    })
  })

  it("keeps counting a paused endpoint's failures without disabling it", () => {
    expect(afterFailedAttempt({ status: "paused", consecutive_failures: 25 })).toEqual({
      status: "paused",
      consecutive_failures: 26
    })
  })

  it("leaves a disabled endpoint's counter as it is (a late failure of an attempt in flight)", () => {
    expect(afterFailedAttempt({ status: "disabled", consecutive_failures: 20 })).toBeUndefined()
  })
})
