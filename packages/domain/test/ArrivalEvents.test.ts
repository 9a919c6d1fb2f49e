import { assert, describe, it } from "@effect/vitest"
import { ArrivalEvents, type Events } from "@switchboard/domain"

const data = (event: Events.DomainEvent | undefined): Record<string, unknown> => ({ ...event?.data })

const conversation = { id: "cnv_1", channelId: "ch_1", contactId: "cnt_1" } as const

describe("the events a message brings", () => {
  it("creates a conversation it is the first message of", () => {
    const event = ArrivalEvents.arrivalEvent(null, "outbound", conversation)
    assert.strictEqual(event?.type, "conversation.created")
    assert.deepInclude(data(event), {
      conversation_id: "cnv_1",
      channel_id: "ch_1",
      contact_id: "cnt_1",
      status: "open"
    })
  })

  it("reopens a closed conversation, saying which way the message went", () => {
    assert.deepInclude(data(ArrivalEvents.arrivalEvent("closed", "inbound", conversation)), {
      reason: "inbound_message"
    })
    assert.deepInclude(data(ArrivalEvents.arrivalEvent("closed", "outbound", conversation)), {
      reason: "outbound_message"
    })
    assert.strictEqual(ArrivalEvents.arrivalEvent("closed", "inbound", conversation)?.type, "conversation.reopened")
  })

  it("brings nothing to an open conversation", () => {
    assert.isUndefined(ArrivalEvents.arrivalEvent("open", "inbound", conversation))
  })

  it("announces a contact the message created", () => {
    const event = ArrivalEvents.contactCreatedEvent("cnt_9")
    assert.strictEqual(event.type, "contact.created")
    assert.deepInclude(data(event), { object_id: "cnt_9", contact_id: "cnt_9" })
  })
})
