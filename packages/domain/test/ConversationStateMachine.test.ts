import { assert, describe, it } from "@effect/vitest"
import { ConversationStateMachine, Events } from "@switchboard/domain"

const usr1 = "usr_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"
const usr2 = "usr_01JD7X6F3Q9T2M5N8R4V0W1Y30"

describe("ConversationStateMachine", () => {
  it("creates a conversation for a first message, reopens a closed one with the direction as reason", () => {
    assert.deepStrictEqual(ConversationStateMachine.messageArrival(null, "outbound"), { type: "conversation.created" })
    assert.deepStrictEqual(ConversationStateMachine.messageArrival("closed", "inbound"), {
      type: "conversation.reopened",
      reason: "inbound_message"
    })
    assert.deepStrictEqual(ConversationStateMachine.messageArrival("closed", "outbound"), {
      type: "conversation.reopened",
      reason: "outbound_message"
    })
    assert.isUndefined(ConversationStateMachine.messageArrival("open", "inbound"))
  })

  it("reports one event per changed member and none when nothing changed", () => {
    const open = { status: "open", assigneeId: null } as const
    assert.deepStrictEqual(ConversationStateMachine.updateChanges(open, open), [])
    assert.deepStrictEqual(ConversationStateMachine.updateChanges(open, { ...open, status: "closed" }), [{
      type: "conversation.closed"
    }])
    assert.deepStrictEqual(ConversationStateMachine.updateChanges({ ...open, status: "closed" }, open), [
      { type: "conversation.reopened", reason: "request" }
    ])
    assert.deepStrictEqual(ConversationStateMachine.updateChanges(open, { ...open, assigneeId: usr1 }), [
      { type: "conversation.assigned", from: null, to: usr1 }
    ])
    assert.deepStrictEqual(
      ConversationStateMachine.updateChanges({ status: "open", assigneeId: usr1 }, {
        status: "closed",
        assigneeId: usr2
      }).map((c) => c.type),
      ["conversation.closed", "conversation.assigned"]
    )
  })

  it("validates the reopen reason of conversation.reopened when it is encoded", () => {
    const cnv = "cnv_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"
    const fields = {
      object: "conversation",
      object_id: cnv,
      conversation_id: cnv,
      channel_id: "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z",
      contact_id: "cnt_01JD7X6F3Q9T2M5N8R4V0W1Y2Z",
      status: "open"
    } as const
    const event = Events.DomainEvent.make("conversation.reopened", { ...fields, reason: "inbound_message" })
    assert.deepStrictEqual(event.encodeData(), { ...fields, reason: "inbound_message" })
    const bad = Events.DomainEvent.make("conversation.reopened", { ...fields, reason: "because" as "request" })
    assert.throws(() => bad.encodeData())
  })
})
