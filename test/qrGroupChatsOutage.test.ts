/**
 * What a QR channel learns of its group chats while its database fails is kept until Postgres takes
 * it (docs/QR-CHANNELS.md "Group chats", docs/OPERATING.md "Provider input during a database
 * outage"): real Baileys against the fake WhatsApp server, the app's Postgres behind a proxy
 * (test/support/PgProxy.ts) that the test breaks. Each group chat is recorded exactly once, its
 * participants once each. Real Postgres only.
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
  appWith({ phoneNumber: "+15550006262" }, {}, { database: proxied, sharding: TestApp.processLocks }),
  proxied
)

describe.skipIf(testDatabaseUrl() === undefined)("QR group chats while the database fails", () => {
  layer(app, { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "records a group chat once when the connection writing it is killed as the write lands, and after a 5 s outage",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const proxy = yield* PgProxy.Proxy
          const sql = yield* SqlClient.SqlClient
          const { channelId, user } = yield* pairedChannel()
          const client = yield* api(user.accessToken, user.workspaceId)
          const alice = wa.contact("+447700900601")
          const bob = wa.contact("+447700900602")
          const group = wa.group({ subject: "Night shift", members: [alice], admins: [alice] })

          const logins = wa.stats.logins
          // the write of the group chat (its first statement) loses its connection as it lands
          const killed = proxy.dropOnStatement(/INSERT INTO group_chats/i, { only: "that" })
          yield* group.adds(bob, { by: alice })
          yield* Effect.promise(() => killed).pipe(
            Effect.timeout("30 seconds"),
            Effect.catchAll(() => Effect.dieMessage("no group chat write was seen"))
          )
          // recorded without a new login reading the groups again (the link's own sync at open)
          yield* eventually(
            client.groupChats.list({ path: { channelId }, urlParams: { limit: 100 } }),
            (p) => p.data.some((g) => g.whatsapp_group_id === group.id && g.participant_count === 2),
            60_000
          )
          assert.strictEqual(wa.stats.logins, logins, "recorded without a new login")
          // then the database is away for 5 s while WhatsApp reports a change
          const outage = yield* Effect.fork(Effect.promise(() => proxy.outage(5_000)))
          yield* group.setsSubject("Night shift (EU)", { by: alice })
          yield* outage.await

          const page = yield* eventually(
            client.groupChats.list({ path: { channelId }, urlParams: { limit: 100 } }),
            (p) => p.data.some((g) => g.whatsapp_group_id === group.id && g.subject === "Night shift (EU)"),
            60_000
          )
          const chats = page.data.filter((g) => g.whatsapp_group_id === group.id)
          assert.deepStrictEqual(chats.map((g) => [g.subject, g.participant_count]), [["Night shift (EU)", 2]])
          const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM group_chats
          WHERE channel_id = ${channelId} AND whatsapp_group_id = ${group.id}`
          assert.strictEqual(rows[0]?.n, 1)
          const contacts = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM contacts
          WHERE workspace_id = ${user.workspaceId} AND phone_number IN (${alice.number}, ${bob.number})`
          assert.strictEqual(contacts[0]?.n, 2, "one contact per participant")
        }),
      180_000
    )
  })
})
