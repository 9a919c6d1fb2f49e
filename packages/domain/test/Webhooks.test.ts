import { describe, expect, it } from "@effect/vitest"
import { clientStatusSources } from "../src/Webhooks.js"

describe("clientStatusSources", () => {
  it("lets a client move an endpoint between active and paused, and a disabled one back to active only", () => {
    expect(clientStatusSources("active")).toEqual(["active", "paused", "disabled"])
    expect(clientStatusSources("paused")).toEqual(["active", "paused"])
  })
})
