import { describe, expect, it } from "@effect/vitest"
import { providerMessageType, sendCapabilityRefusal } from "../src/SendCapability.js"

describe("sendCapabilityRefusal", () => {
  it("takes a send whose type the provider lists", () => {
    expect(sendCapabilityRefusal(["text"], "text")).toBeUndefined()
    expect(sendCapabilityRefusal(["text", "image"], "image")).toBeUndefined()
  })

  it("hands a template to the provider as text", () => {
    expect(providerMessageType("template")).toBe("text")
    expect(sendCapabilityRefusal(["text"], "template")).toBeUndefined()
    expect(sendCapabilityRefusal(["image"], "template")).toBe("message_type_unsupported")
  })

  it("refuses a type the provider does not list, with message_type_unsupported", () => {
    expect(sendCapabilityRefusal(["text"], "image")).toBe("message_type_unsupported")
    expect(sendCapabilityRefusal([], "text")).toBe("message_type_unsupported")
  })
})
