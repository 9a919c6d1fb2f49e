/**
 * Group chats in the domain (docs/API.md "Group chats"): a send names exactly one recipient, a
 * number or a group chat; a group chat's conversation events carry the group chat and no contact,
 * a 1:1 conversation's none.
 */
import { assert, describe, it } from "@effect/vitest"
import { ArrivalEvents, type Events, Messaging } from "@switchboard/domain"
import { Either, Schema } from "effect"

const decode = Schema.decodeUnknownEither(Messaging.SendMessageRequest)
const data = (event: Events.DomainEvent | undefined): Record<string, unknown> => ({ ...event?.data })
const GROUP = "gch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"

describe("sends to a group chat", () => {
  it("take exactly one of to and group_chat_id", () => {
    const text = { text: { body: "hi" } }
    assert.isTrue(Either.isRight(decode({ group_chat_id: GROUP, ...text })))
    assert.isTrue(Either.isRight(decode({ to: "+4915112345678", ...text })))
    assert.isTrue(Either.isLeft(decode({ group_chat_id: GROUP, to: "+4915112345678", ...text })))
    assert.isTrue(Either.isLeft(decode(text)))
    assert.isTrue(Either.isLeft(decode({ group_chat_id: "cnt_01JD7X6F3Q9T2M5N8R4V0W1Y2Z", ...text })))
  })

  it("a group chat's conversation events name the group chat and no contact; a 1:1 one's are unchanged", () => {
    const group = ArrivalEvents.arrivalEvent(null, "inbound", {
      id: "cnv_1",
      channelId: "ch_1",
      contactId: null,
      groupChatId: GROUP
    })
    assert.deepInclude(data(group), { contact_id: null, group_chat_id: GROUP })
    const direct = ArrivalEvents.arrivalEvent(null, "inbound", { id: "cnv_1", channelId: "ch_1", contactId: "cnt_1" })
    assert.notProperty(data(direct), "group_chat_id")
  })
})
