/**
 * Message retention (docs/API.md "Messages", docs/OPERATING.md "Partitions and retention"): with
 * `MESSAGE_RETENTION_DAYS` set, a message made longer ago is no longer listed and
 * `GET /v1/messages/{id}` answers 404 with `details.reason = past_retention`, whether or not its
 * month's partition is gone yet; a recent unknown id is a plain 404; recent messages read as before.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { RetentionSettings } from "@switchboard/db"
import { Ids } from "@switchboard/domain"
import { Effect, Layer, Option } from "effect"
import { api, refused, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const FROM = "+4915112345678"
const DAY = 24 * 3600 * 1000

const AppLayer = TestApp.layer().pipe(Layer.provide(RetentionSettings.layer({ messageDays: Option.some(30) })))

describe("message retention", () => {
  layer(AppLayer, { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("a message older than MESSAGE_RETENTION_DAYS is 404 past_retention and no longer listed", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { key } = yield* sandboxSetup([FROM])
        const client = yield* api(key)
        const kept = yield* client.messages.send({ payload: { to: FROM, text: { body: "kept" } }, headers: {} })
        const aged = yield* client.messages.send({ payload: { to: FROM, text: { body: "aged" } }, headers: {} })
        assert.strictEqual((yield* client.messages.get({ path: { messageId: aged.id } })).id, aged.id)

        // the second one as if made 40 days ago (its id holds its time): still stored, past retention
        const old = `${Ids.idFloor("msg", Date.now() - 40 * DAY)}${aged.id.slice(14)}` as `msg_${string}`
        yield* sql`UPDATE messages SET id = ${old} WHERE id = ${aged.id}`
        yield* sql`UPDATE message_transitions SET message_id = ${old} WHERE message_id = ${aged.id}`
        const [stored] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE id = ${old}`
        assert.strictEqual(stored!.n, 1)

        const gone = yield* refused(client.messages.get({ path: { messageId: old } }))
        assert.strictEqual(gone.status, 404)
        assert.strictEqual(gone.code, "NOT_FOUND")
        assert.deepStrictEqual(gone.details, {
          resource: "message",
          id: old,
          reason: "past_retention",
          retention_days: 30
        })
        const listed = yield* client.messages.list({ urlParams: {} })
        assert.deepStrictEqual(listed.data.map((m) => m.id), [kept.id])
        const thread = yield* client.conversations.messages({
          path: { conversationId: kept.conversation_id },
          urlParams: {}
        })
        assert.deepStrictEqual(thread.data.map((m) => m.id), [kept.id])

        // a recent id of no message: the plain 404
        const unknown = yield* refused(
          client.messages.get({
            path: { messageId: `${Ids.idFloor("msg", Date.now())}0000000000000000` as `msg_${string}` }
          })
        )
        assert.strictEqual(unknown.status, 404)
        assert.isUndefined(unknown.details.reason)
        assert.strictEqual((yield* client.messages.get({ path: { messageId: kept.id } })).id, kept.id)
      }))
  })
})
