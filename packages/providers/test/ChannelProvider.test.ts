import { assert, describe, it } from "@effect/vitest"
import { ChannelProvider } from "@switchboard/providers"

describe("QR send refusals", () => {
  it("marks WhatsApp's throttling PROVIDER_RATE_LIMITED (retryable), without echoing the provider's text", () => {
    for (const reason of ["rate-overlimit", "Error: rate-overlimit (429)", "Too Many Requests"]) {
      const refusal = ChannelProvider.qrSendRefusal(reason)
      assert.deepStrictEqual(refusal, {
        _tag: "Refused",
        retryable: true,
        code: ChannelProvider.PROVIDER_RATE_LIMITED,
        reason: "WhatsApp throttled this channel's sends"
      })
    }
  })

  it("keeps other failures as retryable provider errors", () => {
    const refusal = ChannelProvider.qrSendRefusal("timed out")
    assert.strictEqual(refusal._tag === "Refused" && refusal.code, "provider_error")
    assert.strictEqual(refusal._tag === "Refused" && refusal.retryable, true)
  })
})
