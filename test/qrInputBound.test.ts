/**
 * A QR channel holding as much unrecorded input as it may stops reading from WhatsApp rather than
 * taking more (docs/OPERATING.md "Provider input during a database outage"): with the bound at 2
 * (`PROVIDER_INPUT_MAX_WAITING`) and the app's Postgres unreachable (test/support/PgProxy.ts), the
 * link confirms (a delivery receipt) only the texts it took; the others stay at WhatsApp until the
 * database is back. Then every text is recorded once. Real Postgres only.
 */
import { assert, describe, layer } from "@effect/vitest"
import { testDatabaseUrl } from "@switchboard/db/testing"
import type { BinaryNode } from "baileys"
import { Effect, Layer } from "effect"
import { api, eventually } from "./support/Fixtures.js"
import * as PgProxy from "./support/PgProxy.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"
import * as TestApp from "./support/TestApp.js"

// read by the runner's ProviderInputBacklog when the app layer is built (below, per file)
process.env["PROVIDER_INPUT_MAX_WAITING"] = "2"

const proxied = PgProxy.layer
const app = Layer.merge(
  appWith({ phoneNumber: "+15550007272" }, {}, { database: proxied, sharding: TestApp.processLocks }),
  proxied
)

describe.skipIf(testDatabaseUrl() === undefined)("QR input at its bound", () => {
  layer(app, { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "stops reading from WhatsApp at the bound while Postgres is away, and records everything once it is back",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const proxy = yield* PgProxy.Proxy
          const { channelId, user } = yield* pairedChannel("Bound")
          const client = yield* api(user.accessToken, user.workspaceId)
          const contact = wa.contact("+4915112347272")
          yield* contact.says("hello")
          yield* eventually(
            client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId } }),
            (page) => page.data.length === 1
          )
          // the ids of contacts' messages the link confirmed it took (delivery receipts)
          const confirmed = new Set<string>()
          const onReceipt = (node: BinaryNode) => {
            if (node.attrs["type"] === undefined || node.attrs["type"] === "inactive") {
              confirmed.add(node.attrs["id"] ?? "")
            }
          }
          wa.events.on("receipt-from-client", onReceipt)
          yield* Effect.addFinalizer(() => Effect.sync(() => wa.events.off("receipt-from-client", onReceipt)))

          const outage = yield* Effect.fork(Effect.promise(() => proxy.outage(10_000)))
          const ids: Array<string> = []
          for (let i = 0; i < 6; i++) {
            ids.push(yield* contact.says(`while the database is away ${i}`))
            yield* Effect.sleep("300 millis")
          }
          yield* Effect.sleep("2 seconds")
          const takenWhileAway = ids.filter((id) => confirmed.has(id)).length
          // the two it may hold, and at most one more read before the hold took effect
          assert.isAtMost(takenWhileAway, 3, `confirmed while Postgres was away: ${takenWhileAway} of 6`)
          yield* outage.await

          const page = yield* eventually(
            client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId, limit: 100 } }),
            (page) => page.data.length >= 7,
            60_000
          )
          const bodies = page.data.map((m) => m.text.body)
          assert.sameMembers(bodies, ["hello", ...ids.map((_, i) => `while the database is away ${i}`)])
          assert.strictEqual(ids.filter((id) => confirmed.has(id)).length, 6)
        }),
      180_000
    )
  })
})
