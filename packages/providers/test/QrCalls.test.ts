import { describe, expect, it } from "@effect/vitest"
import { QrCalls } from "@switchboard/providers"

describe("QrCalls.outcomeOf", () => {
  it("reads a terminate without an answer as a missed call", () => {
    expect(QrCalls.outcomeOf("terminate", { acceptedAt: null }, 5_000)).toEqual({ status: "missed", durationS: null })
  })

  it("reads WhatsApp's timeout as a missed call", () => {
    expect(QrCalls.outcomeOf("timeout", { acceptedAt: null }, 5_000)).toEqual({ status: "missed", durationS: null })
  })

  it("reads a terminate after an answer on the phone as answered elsewhere, with its seconds", () => {
    expect(QrCalls.outcomeOf("terminate", { acceptedAt: 1_000 }, 43_400)).toEqual({
      status: "answered_elsewhere",
      durationS: 42
    })
  })

  it("reads a reject as rejected", () => {
    expect(QrCalls.outcomeOf("reject", { acceptedAt: null }, 1)).toEqual({ status: "rejected", durationS: null })
  })

  it("ends nothing while the call rings", () => {
    for (const step of ["offer", "ringing", "accept", "preaccept", "transport"] as const) {
      expect(QrCalls.outcomeOf(step, { acceptedAt: null }, 1)).toBeNull()
    }
  })
})
