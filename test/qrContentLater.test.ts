/**
 * Messages whose content never reaches a linked device, or reaches it later (docs/QR-CHANNELS.md
 * "Messages without content"), through the real Baileys client against the fake WhatsApp server:
 * a view-once marker, a message Baileys could not decrypt (it asks the sender again), and one
 * WhatsApp delivered without content (Baileys asks the phone). Each is recorded at once as
 * `unsupported` with its kind and emits `message.received`; when the content comes under the same
 * WhatsApp id, the same message is completed in place (one message, a second `message.received`).
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import type { Messaging } from "@switchboard/domain"
import { Effect } from "effect"
import { api, eventually, type SignedUp } from "./support/Fixtures.js"
import * as QrApp from "./support/QrApp.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"

/** The channel's inbound messages once `done` holds, within 30 s. */
const inboundUntil = (
  user: SignedUp,
  channelId: `ch_${string}`,
  done: (messages: ReadonlyArray<Messaging.Message>) => boolean
) => QrApp.inboundUntil(user, channelId, done, 30_000)

/** The `type` of each `message.received` event of a message, oldest first. */
const receivedTypes = (messageId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ envelope: string }>`SELECT envelope FROM events
      WHERE type = 'message.received' AND object_id = ${messageId} ORDER BY created_at, id`
    return rows.map((r) => JSON.parse(r.envelope).data.type as string)
  }).pipe(Effect.orDie)

describe("QR messages whose content comes later, or never", () => {
  layer(appWith({ phoneNumber: "+15550006161" }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("a view-once message is recorded at once as unsupported view_once, with message.received", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("View once")
        const contact = wa.contact("+4915112349001")
        yield* contact.sendsViewOnce()
        const [message] = yield* inboundUntil(user, channelId, (data) => data.length === 1)
        assert.strictEqual(message!.type, "unsupported", JSON.stringify(message))
        assert.deepStrictEqual(message!.unsupported, { kind: "view_once" })
        assert.strictEqual(message!.from, contact.number)
        assert.deepStrictEqual(
          yield* eventually(receivedTypes(message!.id), (types) => types.length > 0),
          ["unsupported"]
        )
      }))

    it.scoped("a message Baileys cannot decrypt is recorded as ciphertext, then completed in place by the resend", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Ciphertext")
        const contact = wa.contact("+4915112349002")
        wa.holdResends()
        const id = yield* contact.says("sent over a broken session", { garbled: true })
        const [pending] = yield* inboundUntil(user, channelId, (data) => data.length === 1)
        assert.deepStrictEqual(pending!.unsupported, { kind: "ciphertext" }, JSON.stringify(pending))
        assert.deepStrictEqual(yield* eventually(receivedTypes(pending!.id), (t) => t.length > 0), ["unsupported"])
        assert.include(wa.retryRequests, id)

        yield* wa.releaseResends()
        const [done] = yield* inboundUntil(user, channelId, (data) => data[0]?.type === "text")
        assert.strictEqual(done!.id, pending!.id)
        assert.strictEqual(done!.text.body, "sent over a broken session")
        assert.isUndefined(done!.unsupported)
        const all = yield* inboundUntil(user, channelId, () => true)
        assert.strictEqual(all.length, 1, JSON.stringify(all))
        assert.deepStrictEqual(
          yield* eventually(receivedTypes(done!.id), (t) => t.length > 1),
          ["unsupported", "text"]
        )
      }))

    it.scoped("a message delivered without content is recorded as placeholder, then completed by the phone", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Placeholder")
        const contact = wa.contact("+4915112349003")
        wa.holdResends()
        const id = yield* contact.sendsWithoutContent({ conversation: "I saw your ad" })
        const [pending] = yield* inboundUntil(user, channelId, (data) => data.length === 1)
        assert.deepStrictEqual(pending!.unsupported, { kind: "placeholder" }, JSON.stringify(pending))
        assert.deepStrictEqual(yield* eventually(receivedTypes(pending!.id), (t) => t.length > 0), ["unsupported"])
        // Baileys asks the phone for it (after its own 2 s wait)
        yield* wa.until(() => wa.placeholderRequests.includes(id)).pipe(Effect.timeout("20 seconds"), Effect.orDie)

        yield* wa.releaseResends()
        const [done] = yield* inboundUntil(user, channelId, (data) => data[0]?.type === "text")
        assert.strictEqual(done!.id, pending!.id)
        assert.strictEqual(done!.text.body, "I saw your ad", JSON.stringify({ errors: wa.serverErrors, done }))
        const all = yield* inboundUntil(user, channelId, () => true)
        assert.strictEqual(all.length, 1, JSON.stringify(all))
        assert.deepStrictEqual(
          yield* eventually(receivedTypes(done!.id), (t) => t.length > 1),
          ["unsupported", "text"]
        )
      }))
  })
})
