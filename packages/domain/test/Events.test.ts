import { assert, describe, it } from "@effect/vitest"
import { EventCatalogue, Events } from "@switchboard/domain"

const msg = "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" as const

describe("DomainEvent", () => {
  it("declares a data schema for every event type of the catalogue", () => {
    assert.deepStrictEqual(Object.keys(Events.EVENT_DATA).sort(), EventCatalogue.EVENT_TYPES.map((e) => e.type).sort())
  })

  it("stores data members in the declared order, whatever order they were given in", () => {
    const event = Events.DomainEvent.make("message.failed", {
      reason: "blocked",
      error_code: "recipient_blocked",
      failure_class: "permanent",
      category: "utility",
      to_state: "failed_permanent",
      from_state: "dispatching",
      message_id: msg,
      object_id: msg,
      object: "message"
    })
    assert.strictEqual(
      JSON.stringify(event.encodeData()),
      `{"object":"message","object_id":"${msg}","message_id":"${msg}","from_state":"dispatching",` +
        `"to_state":"failed_permanent","category":"utility","failure_class":"permanent",` +
        `"error_code":"recipient_blocked","reason":"blocked"}`
    )
  })

  it("refuses to encode data that does not match its type's schema", () => {
    const bad = Events.DomainEvent.make("contact.created", {
      object: "contact",
      object_id: "cnt_1" as `cnt_${string}`,
      contact_id: "cnt_1" as `cnt_${string}`
    })
    assert.throws(() => bad.encodeData())
  })

  it("builds a test event of any type with placeholder data", () => {
    const event = Events.DomainEvent.test("message.received", { object: "message", object_id: "test_1" })
    assert.isTrue(event.isTest)
    assert.deepStrictEqual(event.encodeData(), { object: "message", object_id: "test_1" })
  })

  it("reports a message status event only for the statuses that have one", () => {
    const data = {
      object: "message",
      object_id: msg,
      message_id: msg,
      from_state: "provider_accepted",
      category: "utility"
    } as const
    assert.strictEqual(Events.messageStatusEvent("sent", data)?.type, "message.sent")
    assert.strictEqual(Events.messageStatusEvent("failed_permanent", data)?.type, "message.failed")
    assert.isUndefined(Events.messageStatusEvent("dispatching", data))
  })
})
