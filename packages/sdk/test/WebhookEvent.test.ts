import { assert, describe, it } from "@effect/vitest"
import { Events } from "@switchboard/domain"
import { isWebhookEvent, WebhookEvent } from "@switchboard/sdk"
import { Schema } from "effect"

const decode = Schema.decodeUnknownSync(Schema.parseJson(WebhookEvent))
const envelope = (type: string, data: unknown, extra: object = {}) =>
  JSON.stringify({ id: "evt_1", type, created_at: "2026-11-22T10:00:00.000Z", workspace_id: "ws_1", ...extra, data })
const ch = "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" as const

describe("WebhookEvent", () => {
  it("types a catalogued event with the data the service builds for it", () => {
    const built = Events.DomainEvent.make("channel.connected", {
      object: "channel",
      object_id: ch,
      channel_id: ch,
      status: "connected",
      from_status: "awaiting_scan",
      to_status: "connected",
      reason: "paired",
      phone_number: "+15550001111"
    })
    const event = decode(envelope(built.type, built.encodeData()))
    assert.isTrue(isWebhookEvent(event, "channel.connected"))
    if (isWebhookEvent(event, "channel.connected")) {
      assert.strictEqual(event.data.from_status, "awaiting_scan")
      assert.strictEqual(event.data.phone_number, "+15550001111")
    }
    assert.isFalse(isWebhookEvent(event, "channel.disconnected"))
  })

  it("decodes a test delivery's placeholder data without typing it as the real event", () => {
    const event = decode(envelope("message.received", { object: "message", object_id: "test_1" }, { is_test: true }))
    assert.isTrue(event.is_test)
    assert.strictEqual(event.data.object_id, "test_1")
    assert.isFalse(isWebhookEvent(event, "message.received"))
  })

  it("decodes an unknown type as a generic event and refuses data without object members", () => {
    const event = decode(envelope("invoice.paid", { object: "invoice", object_id: "inv_1", amount: 3 }))
    assert.strictEqual(event.type, "invoice.paid")
    assert.throws(() => decode(envelope("invoice.paid", { amount: 3 })))
  })
})
