/**
 * The registry of emitters (`EMITTED_EVENT_TYPES`, reported by `GET /v1/webhook-event-types`)
 * agrees with what the code emits: the sandbox flows below run every emitting path they can
 * reach, and every type the registry lists is either among the events they stored or proven by
 * the test file named in `PROVEN_ELSEWHERE` (paths that need a linked QR device); every type they
 * stored is in the registry.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { EmittedEvents, EventCatalogue } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { api, sandboxSetup, waitForMessage } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const PHONE = "+4915112345678"

/** Emitted only on paths these sandbox flows cannot reach; the named test file asserts each. */
const PROVEN_ELSEWHERE: Record<string, string> = {
  "channel.requires_repair": "test/qr.test.ts",
  "conversation.assigned": "test/conversations.test.ts",
  "conversation.updated": "test/conversations.test.ts",
  "conversation.closed": "test/conversations.test.ts",
  "conversation.reopened": "test/conversations.test.ts",
  "conversation.note_added": "test/conversations.test.ts",
  "contact.updated": "test/contacts.test.ts",
  "contact.deleted": "test/contacts.test.ts",
  "contact.import_completed": "test/contactImports.test.ts",
  "template.created": "test/templates.test.ts",
  "template.updated": "test/templates.test.ts",
  "template.archived": "test/templates.test.ts"
}

describe("event emitters", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("every type marked emitted is emitted by a tested path, and every emitted type is marked", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const operator = yield* Operator.Operator
        const { key, session, user } = yield* sandboxSetup([PHONE])
        const client = yield* api(key)
        const send = (to: string) =>
          client.messages.send({ payload: { channel_id: session.channel_id, to, text: { body: "x" } }, headers: {} })
        const ok = yield* send(PHONE)
        assert.strictEqual(ok.status, "queued")
        yield* waitForMessage(key, ok.id, (m) => m.status === "read")
        const failing = yield* send("+15005550001")
        yield* waitForMessage(key, failing.id, (m) => m.status === "failed_permanent")
        const [, inbound] = yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: PHONE, text: { body: "hello" } },
          withResponse: true
        })
        assert.strictEqual(inbound.status, 202)
        yield* operator.setStatus(session.channel_id, "suspended")
        yield* operator.setStatus(session.channel_id, "active")
        const revoked = yield* client.sandbox.revoke({ path: { sessionId: session.id } })
        assert.strictEqual(revoked.status, "revoked")

        // message.received is recorded by the channel's entity after the 202
        let stored = new Set<string>()
        for (let i = 0; i < 100 && !stored.has("message.received"); i++) {
          const rows = yield* sql<{ type: string }>`SELECT DISTINCT type FROM events
            WHERE workspace_id = ${user.workspaceId}`
          stored = new Set(rows.map((r) => r.type))
          if (!stored.has("message.received")) yield* Effect.sleep("100 millis")
        }

        for (const type of EmittedEvents.EMITTED_EVENT_TYPES) {
          if (stored.has(type)) continue
          const file = PROVEN_ELSEWHERE[type]
          assert.isDefined(file, `${type} is marked emitted but no tested path emitted it`)
          assert.include(readFileSync(join(__dirname, "..", file!), "utf8"), `"${type}"`, `${file} asserts ${type}`)
        }
        for (const type of stored) {
          assert.isTrue(EmittedEvents.EMITTED_EVENT_TYPES.has(type as never), `${type} is emitted but not marked`)
        }

        // the endpoint reports the registry, in the list envelope
        const catalogue = yield* (yield* api(user.accessToken, user.workspaceId)).webhooks.eventTypes({
          urlParams: { limit: 100 }
        })
        assert.deepStrictEqual(catalogue.page, { next_cursor: null, has_more: false })
        assert.deepStrictEqual(
          catalogue.data,
          EventCatalogue.EVENT_TYPES.map((e) => ({
            type: e.type,
            emitted: EmittedEvents.EMITTED_EVENT_TYPES.has(e.type)
          }))
        )
        for (const type of ["template.created", "contact.updated", "campaign.started"]) {
          const entry = catalogue.data.find((e) => e.type === type)
          assert.strictEqual(entry?.emitted, EmittedEvents.EMITTED_EVENT_TYPES.has(type as never), type)
        }
      }).pipe(Effect.provide(TestApp.operatorLayer)))

    it.effect("channel.created says from_status (null), to_status and reason like every channel event", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { session } = yield* sandboxSetup([])
        const rows = yield* sql<{ envelope: string }>`SELECT envelope FROM events
          WHERE type = 'channel.created' AND object_id = ${session.channel_id}`
        assert.strictEqual(rows.length, 1)
        assert.deepStrictEqual(JSON.parse(rows[0]!.envelope).data, {
          object: "channel",
          object_id: session.channel_id,
          channel_id: session.channel_id,
          status: "connected",
          from_status: null,
          to_status: "connected",
          reason: "created"
        })
      }))
  })
})
