import { assert, describe, it } from "@effect/vitest"
import { arrivalEvent, contactCreatedEvent } from "@switchboard/domain"
import type { DomainEvent } from "@switchboard/domain"

const data = (event: DomainEvent | undefined): Record<string, unknown> => ({ ...event?.data })

const conversation = { id: "cnv_1", channelId: "ch_1", contactId: "cnt_1" } as const

describe("the events a message brings", () => {
  it("creates a conversation it is the first message of", () => {
    const event = arrivalEvent(null, "outbound", conversation)
    assert.strictEqual(event?.type, "conversation.created")
    assert.deepInclude(data(event), {
      conversation_id: "cnv_1",
      channel_id: "ch_1",
      contact_id: "cnt_1",
      status: "open"
    })
  })

  it("reopens a closed conversation, saying which way the message went", () => {
    assert.deepInclude(data(arrivalEvent("closed", "inbound", conversation)), { reason: "inbound_message" })
    assert.deepInclude(data(arrivalEvent("closed", "outbound", conversation)), { reason: "outbound_message" })
    assert.strictEqual(arrivalEvent("closed", "inbound", conversation)?.type, "conversation.reopened")
  })

  it("brings nothing to an open conversation", () => {
    assert.isUndefined(arrivalEvent("open", "inbound", conversation))
  })

  it("announces a contact the message created", () => {
    const event = contactCreatedEvent("cnt_9")
    assert.strictEqual(event.type, "contact.created")
    assert.deepInclude(data(event), { object_id: "cnt_9", contact_id: "cnt_9" })
  })
})
