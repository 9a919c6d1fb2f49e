import { describe, expect, it } from "vitest"
import { REPEATED_SIGNAL_WINDOW_MS, signalMeaning } from "../src/Launch.js"

describe("Launch.signalMeaning", () => {
  it("drains at the first stop signal, takes a quick repeat as the same stop and a later one as stop now", () => {
    expect(signalMeaning(undefined, 1_000)).toBe("drain")
    expect(signalMeaning(1_000, 1_005)).toBe("same-stop")
    expect(signalMeaning(1_000, 1_000 + REPEATED_SIGNAL_WINDOW_MS - 1)).toBe("same-stop")
    expect(signalMeaning(1_000, 1_000 + REPEATED_SIGNAL_WINDOW_MS)).toBe("stop-now")
  })
})
