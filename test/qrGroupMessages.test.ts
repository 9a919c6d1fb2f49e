/**
 * Messages in the group chats of a QR channel over the API (docs/API.md "Group chats"), end to end
 * through the real Baileys client and the fake WhatsApp server (test/fake-whatsapp/FakeGroups.ts):
 * members' texts and images recorded in the group chat's own conversation with the participant as
 * sender and `mentions`, `message.received` with `group_chat_id`, never in a 1:1 conversation; sends
 * to a group chat (`POST /v1/messages` with `group_chat_id`, a conversation reply quoting a member)
 * that every member decrypts, walked to read by the first member's receipts; read receipts to the
 * group; the refusals of an announce-only group chat and of one our number was removed from.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import type { GroupChats, Messaging } from "@switchboard/domain"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { api, eventually, refused, type SignedUp } from "./support/Fixtures.js"
import * as QrApp from "./support/QrApp.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"

/** The channel's group chat for WhatsApp group `whatsappGroupId` once `done` holds. */
const groupChatUntil = (
  user: SignedUp,
  channelId: `ch_${string}`,
  whatsappGroupId: string,
  done: (g: GroupChats.GroupChat) => boolean = () => true
) =>
  Effect.gen(function*() {
    const client = yield* api(user.accessToken, user.workspaceId)
    const page = yield* eventually(
      client.groupChats.list({ path: { channelId }, urlParams: { limit: 100 } }),
      (p) => p.data.some((g) => g.whatsapp_group_id === whatsappGroupId && done(g)),
      30_000
    )
    const found = page.data.find((g) => g.whatsapp_group_id === whatsappGroupId)
    assert.isDefined(found, `group chat ${whatsappGroupId}`)
    return found!
  })

/** The channel's inbound messages once `done` holds, within 30 s. */
const inboundUntil = (
  user: SignedUp,
  channelId: `ch_${string}`,
  done: (messages: ReadonlyArray<Messaging.Message>) => boolean
) => QrApp.inboundUntil(user, channelId, done, 30_000)

/** The `data` of the events about `objectId`, by type, oldest first. */
const eventsOf = (objectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ type: string; envelope: string }>`SELECT type, envelope FROM events
      WHERE object_id = ${objectId} ORDER BY created_at, id`
    return rows.map((r) => ({ type: r.type, data: JSON.parse(r.envelope).data as Record<string, unknown> }))
  }).pipe(Effect.orDie)

/** Uploads a file (`POST /v1/media`); its media id. */
const upload = (user: SignedUp, bytes: Uint8Array, contentType: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const reply = yield* client.execute(
      HttpClientRequest.post("/v1/media").pipe(
        HttpClientRequest.setHeader("authorization", `Bearer ${user.accessToken}`),
        HttpClientRequest.setHeader("x-workspace-id", user.workspaceId),
        HttpClientRequest.bodyUint8Array(bytes, contentType)
      )
    )
    const body = (yield* reply.json) as { id: `med_${string}` }
    assert.strictEqual(reply.status, 201, JSON.stringify(body))
    return body.id
  }).pipe(Effect.scoped, Effect.orDie)

/** 50 kB that start as a PNG does (the media check reads the signature). */
const png = () => {
  const bytes = randomBytes(50_000)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  return bytes
}

describe("QR group chat messages over the API", () => {
  layer(appWith({ phoneNumber: "+15550006363" }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("records members' text and image in the group chat's conversation, never in a 1:1 one", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const alice = wa.contact("+447700900701")
        const bob = wa.contact("+447700900702")
        // groups the number is in when the link opens are read then
        const team = wa.group({ subject: "Team", members: [alice, bob], admins: [alice] })
        const { channelId, user } = yield* pairedChannel()
        const client = yield* api(user.accessToken, user.workspaceId)
        const chat = yield* groupChatUntil(user, channelId, team.id, (g) => g.subject === "Team")

        const textWaId = yield* alice.sends({
          extendedTextMessage: {
            text: "@bob can you take this one?",
            contextInfo: { mentionedJid: [`${bob.user}@s.whatsapp.net`] }
          }
        }, { group: team })
        const imageWa = yield* bob.sendsMedia("image", png(), { mimetype: "image/png", caption: "the receipt" }, {
          group: team
        })
        // alice also writes to the number directly: her 1:1 conversation shows only that
        yield* alice.says("and privately: thanks")
        const messages = yield* inboundUntil(
          user,
          channelId,
          (m) => m.length === 3 && m.every((x) => x.media === null || x.media.status === "ready")
        )
        const text = messages.find((m) => m.type === "text" && m.group_chat_id !== undefined)!
        const image = messages.find((m) => m.type === "image")!
        const direct = messages.find((m) => m.group_chat_id === undefined)!
        assert.isDefined(text, JSON.stringify(messages))

        const [aliceContact, bobContact] = [text.contact_id!, image.contact_id!]
        assert.deepInclude(text, {
          group_chat_id: chat.id,
          from: alice.number,
          sender: { phone_number: alice.number, whatsapp_lid: null },
          text: { body: "@bob can you take this one?" },
          mentions: [bobContact]
        })
        assert.deepInclude(image, { group_chat_id: chat.id, from: bob.number, conversation_id: text.conversation_id })
        assert.strictEqual(image.image?.caption, "the receipt")
        // the group chat's own conversation: keyed by the group chat, no contact
        const conversation = yield* client.conversations.get({ path: { conversationId: text.conversation_id } })
        assert.deepInclude(conversation, { group_chat_id: chat.id, contact_id: null, contact: null, status: "open" })
        const thread = yield* client.conversations.messages({
          path: { conversationId: text.conversation_id },
          urlParams: {}
        })
        assert.sameMembers(thread.data.map((m) => m.id), [text.id, image.id])
        // the 1:1 conversation of alice shows her direct message only
        assert.strictEqual(direct.contact_id, aliceContact)
        assert.notStrictEqual(direct.conversation_id, text.conversation_id)
        const privately = yield* client.conversations.messages({
          path: { conversationId: direct.conversation_id },
          urlParams: {}
        })
        assert.deepStrictEqual(privately.data.map((m) => m.text.body), ["and privately: thanks"])
        const list = yield* client.conversations.list({ urlParams: { contact_id: aliceContact } })
        assert.deepStrictEqual(list.data.map((c) => c.id), [direct.conversation_id])
        // participants are the contacts the sync made
        const detail = yield* client.groupChats.get({ path: { groupChatId: chat.id } })
        assert.sameMembers(detail.participants.map((p) => p.contact_id), [aliceContact, bobContact])

        // message.received names the group chat and the participant; the conversation's created names the group chat
        const received = (yield* eventsOf(text.id)).filter((e) => e.type === "message.received")
        assert.deepStrictEqual(received.map((e) => [e.data["group_chat_id"], e.data["contact_id"]]), [[
          chat.id,
          aliceContact
        ]])
        const imageReceived = (yield* eventsOf(image.id)).filter((e) => e.type === "message.received")
        assert.deepStrictEqual(imageReceived.map((e) => [e.data["group_chat_id"], e.data["media_status"]]), [[
          chat.id,
          "ready"
        ]])
        const created = (yield* eventsOf(text.conversation_id)).filter((e) => e.type === "conversation.created")
        assert.deepStrictEqual(created.map((e) => [e.data["group_chat_id"], e.data["contact_id"]]), [[chat.id, null]])

        // read: the receipt goes to the group, naming the member who wrote
        yield* client.conversations.markRead({ path: { conversationId: text.conversation_id } })
        yield* wa.until(() => team.readReceipts.length >= 2).pipe(
          Effect.timeout("30 seconds"),
          Effect.catchAll(() => Effect.dieMessage(`read receipts: ${JSON.stringify(team.readReceipts)}`))
        )
        assert.sameDeepMembers(
          team.readReceipts.map((r) => [r.id, r.participant.split("@")[0]]),
          [[textWaId, alice.user], [imageWa.id, bob.user]]
        )
      }))

    it.scoped("keeps a message of a participant WhatsApp names by LID on the known contact of its number", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel()
        const client = yield* api(user.accessToken, user.workspaceId)
        const erin = wa.contact("+447700900705")
        const known = yield* client.contacts.create({ payload: { phone_number: erin.number, name: "Erin" } })
        // a group made after the link opened, not read yet: its first message keeps it (no subject yet)
        const group = wa.group({ subject: "By LID", members: [erin], addressing: "lid" })
        yield* erin.says("hello from my LID", { group })
        const [message] = yield* inboundUntil(user, channelId, (m) => m.length === 1)
        assert.deepInclude(message, {
          contact_id: known.id,
          from: erin.number,
          sender: { phone_number: erin.number, whatsapp_lid: erin.lidUser }
        })
        const chat = yield* groupChatUntil(user, channelId, group.id)
        assert.strictEqual(message!.group_chat_id, chat.id)
        assert.deepInclude(chat, { subject: "", is_participant: true })
      }))

    it.scoped("sends to a group chat: text and image to every member, a reply quoting a member, walked to read", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const carol = wa.contact("+447700900703")
        const dave = wa.contact("+447700900704")
        const team = wa.group({ subject: "Orders", members: [carol, dave], admins: [carol] })
        const { channelId, user } = yield* pairedChannel()
        const client = yield* api(user.accessToken, user.workspaceId)
        const chat = yield* groupChatUntil(user, channelId, team.id, (g) => g.participant_count === 2)
        const decrypted = (id: string) => team.received.filter((r) => r.id === id)

        const sent = yield* client.messages.send({
          payload: { group_chat_id: chat.id, text: { body: "Order 42 is ready" } },
          headers: {}
        })
        assert.deepInclude(sent, {
          channel_id: channelId,
          group_chat_id: chat.id,
          contact_id: null,
          to: `${team.id}@g.us`,
          status: "queued"
        })
        yield* wa.until(() => decrypted(sent.id).length === 2)
        assert.sameMembers(decrypted(sent.id).map((r) => r.text), ["Order 42 is ready", "Order 42 is ready"])
        const read = yield* eventually(
          client.messages.get({ path: { messageId: sent.id } }),
          (m) => m.status === "read"
        )
        assert.strictEqual(read.status, "read")

        // an image, uploaded first
        const media = yield* upload(user, png(), "image/png")
        const photo = yield* client.messages.send({
          payload: { group_chat_id: chat.id, image: { media_id: media, caption: "the table plan" } },
          headers: {}
        })
        yield* wa.until(() => decrypted(photo.id).length === 2)
        assert.strictEqual(decrypted(photo.id)[0]!.message.imageMessage?.caption, "the table plan")

        // carol writes; the reply in the group chat's conversation quotes her
        const question = yield* carol.says("which table?", { group: team })
        const [asked] = yield* inboundUntil(user, channelId, (m) => m.length === 1)
        assert.strictEqual(asked!.text.body, "which table?")
        const reply = yield* client.conversations.reply({
          path: { conversationId: asked!.conversation_id },
          payload: { text: { body: "Table 7" }, reply_to: asked!.id },
          headers: {}
        })
        assert.deepInclude(reply, {
          group_chat_id: chat.id,
          conversation_id: asked!.conversation_id,
          to: `${team.id}@g.us`
        })
        assert.strictEqual(sent.conversation_id, asked!.conversation_id)
        yield* wa.until(() => decrypted(reply.id).length === 2)
        const quote = decrypted(reply.id)[0]!.message.extendedTextMessage?.contextInfo
        assert.strictEqual(quote?.stanzaId, question)
        assert.strictEqual(quote?.participant?.split("@")[0], carol.user)
        // a reaction to her message is keyed by her too
        const reaction = yield* client.messages.send({
          payload: { group_chat_id: chat.id, reaction: { message_id: asked!.id, emoji: "👍" } },
          headers: {}
        })
        yield* wa.until(() => decrypted(reaction.id).length === 2)
        const reacted = decrypted(reaction.id)[0]!.message.reactionMessage
        assert.deepInclude(reacted, { text: "👍" })
        assert.deepStrictEqual([reacted?.key?.id, reacted?.key?.participant?.split("@")[0]], [question, carol.user])

        // a 1:1 reply cannot quote a group chat's message
        const misquoted = yield* refused(client.messages.send({
          payload: { channel_id: channelId, to: carol.number, text: { body: "hm" }, reply_to: asked!.id },
          headers: {}
        }))
        assert.deepStrictEqual([misquoted.status, misquoted.details?.["reason"]], [
          422,
          "message_not_in_conversation"
        ])
      }))

    it.scoped("refuses sends to an announce-only group chat and to one our number was removed from", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const erin = wa.contact("+447700900706")
        const news = wa.group({ subject: "News", members: [erin], admins: [erin], announceOnly: true })
        const shop = wa.group({ subject: "Shop", members: [erin], admins: [erin] })
        const { channelId, user } = yield* pairedChannel()
        const client = yield* api(user.accessToken, user.workspaceId)
        const announce = yield* groupChatUntil(user, channelId, news.id)
        const send = (groupChatId: `gch_${string}`) =>
          refused(client.messages.send({ payload: { group_chat_id: groupChatId, text: { body: "hi" } }, headers: {} }))

        const onlyAdmins = yield* send(announce.id)
        assert.deepStrictEqual(
          [onlyAdmins.status, onlyAdmins.code, onlyAdmins.details?.["reason"]],
          [409, "CHANNEL_CAPABILITY_UNAVAILABLE", "group_chat_announce_only"]
        )
        yield* shop.removesUs({ by: erin })
        const left = yield* groupChatUntil(user, channelId, shop.id, (g) => !g.is_participant)
        const removed = yield* send(left.id)
        assert.deepStrictEqual(
          [removed.status, removed.code, removed.details?.["reason"]],
          [409, "CHANNEL_CAPABILITY_UNAVAILABLE", "not_a_participant"]
        )
        // nothing reached WhatsApp, nothing was written
        assert.deepStrictEqual([news.received, shop.received, news.refused], [[], [], []])
        const outbound = yield* client.messages.list({ urlParams: { direction: "outbound", channel_id: channelId } })
        assert.deepStrictEqual(outbound.data, [])
        // exactly one of to and group_chat_id
        const both = yield* refused(client.messages.send({
          payload: { group_chat_id: announce.id, to: erin.number, text: { body: "hi" } },
          headers: {}
        }))
        assert.strictEqual(both.status, 422)
      }))
  })
})
