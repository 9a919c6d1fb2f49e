/**
 * Group chat messages a QR channel hears while its database fails are kept until Postgres takes them
 * (docs/API.md "Group chats", docs/OPERATING.md "Provider input during a database outage"): real
 * Baileys against the fake WhatsApp server, the app's Postgres behind a proxy (test/support/PgProxy.ts)
 * that the test breaks. A member's text whose write loses its connection as it lands, and one
 * written during a 5 s outage, are each recorded exactly once in the group chat's conversation, with
 * one `message.received` each. Real Postgres only.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { testDatabaseUrl } from "@switchboard/db/testing"
import { Effect, Layer } from "effect"
import { api, eventually } from "./support/Fixtures.js"
import * as PgProxy from "./support/PgProxy.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"
import * as TestApp from "./support/TestApp.js"

const proxied = PgProxy.layer
const app = Layer.merge(
  appWith({ phoneNumber: "+15550006464" }, {}, { database: proxied, sharding: TestApp.processLocks }),
  proxied
)

describe.skipIf(testDatabaseUrl() === undefined)("QR group chat messages while the database fails", () => {
  layer(app, { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "records a member's message once when its write is killed as it lands, and one heard during a 5 s outage",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const proxy = yield* PgProxy.Proxy
          const sql = yield* SqlClient.SqlClient
          const alice = wa.contact("+447700900801")
          const bob = wa.contact("+447700900802")
          const group = wa.group({ subject: "Night shift", members: [alice, bob], admins: [alice] })
          const { channelId, user } = yield* pairedChannel()
          const client = yield* api(user.accessToken, user.workspaceId)
          yield* eventually(
            client.groupChats.list({ path: { channelId }, urlParams: { limit: 100 } }),
            (p) => p.data.some((g) => g.whatsapp_group_id === group.id),
            30_000
          )

          // the message's write loses its connection as it lands
          const killed = proxy.dropOnStatement(/INSERT INTO messages/i, { only: "that" })
          yield* alice.says("first, killed", { group })
          yield* Effect.promise(() => killed).pipe(
            Effect.timeout("30 seconds"),
            Effect.catchAll(() => Effect.dieMessage("no message write was seen"))
          )
          // then the database is away for 5 s while another member writes
          const outage = yield* Effect.fork(Effect.promise(() => proxy.outage(5_000)))
          yield* bob.says("second, in the outage", { group })
          yield* outage.await

          const page = yield* eventually(
            client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId, limit: 100 } }),
            (p) => p.data.length >= 2,
            60_000
          )
          // a late duplicate would come from the kept input's retry, within a second
          yield* Effect.sleep("1 second")
          const messages = (yield* client.messages.list({
            urlParams: { direction: "inbound", channel_id: channelId, limit: 100 }
          })).data
          assert.sameMembers(messages.map((m) => m.text.body), ["first, killed", "second, in the outage"])
          assert.strictEqual(new Set(messages.map((m) => m.conversation_id)).size, 1, "one group conversation")
          assert.isTrue(messages.every((m) => m.group_chat_id !== undefined), JSON.stringify(page.data))
          const conversations = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM conversations
            WHERE channel_id = ${channelId} AND group_chat_id IS NOT NULL`
          assert.strictEqual(conversations[0]?.n, 1, "one conversation for the group chat")
          for (const m of messages) {
            const received = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events
              WHERE object_id = ${m.id} AND type = 'message.received'`
            assert.strictEqual(received[0]?.n, 1, `one message.received for ${m.text.body}`)
          }
        }),
      180_000
    )
  })
})
