/**
 * Every list route of the served OpenAPI document answers the list envelope and pages with
 * `limit` and `after` (docs/API.md): walked with `limit=1`, following `page.next_cursor` to the
 * end, it yields each item once, in the order one page of 100 shows. A new list route needs a
 * fixture below (the test fails on a list it cannot fill), so the next one cannot regress.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Ids } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect, Schedule } from "effect"
import { api, createKey, request, sandboxSetup, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const RECIPIENTS = ["+4915112345678", "+4915112345679"]

/** What identifies an item of a list: its id, or the unique key of keyed lists. */
const keyOf = (item: any): string => item.id ?? item.tag ?? item.type

describe("every list route pages with limit and after", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("walks each list of the OpenAPI document one item at a time to its end", () =>
      Effect.gen(function*() {
        const { key, user } = yield* sandboxSetup(RECIPIENTS)
        // room for two of everything
        yield* Effect.flatMap(Operator.Operator, (o) =>
          Effect.zipRight(
            o.setPlan(user.workspaceId, "growth"),
            o.override(user.workspaceId, "shared_test_sessions", 2)
          )).pipe(Effect.provide(TestApp.operatorLayer), Effect.orDie)
        const admin = (yield* createKey(user, {
          mode: "test",
          scopes: ["contacts.manage", "templates.manage", "webhooks.manage", "messages.send"]
        })).secret
        const live = (yield* createKey(user, { mode: "live" })).secret
        // the fixtures through the typed client, which decodes the declared success only
        const byKey = yield* api(key)
        const byAdmin = yield* api(admin)
        const byUser = yield* api(user.accessToken, user.workspaceId)

        const qrChannel = yield* (yield* api(live)).channels.create({ payload: { provider: "qr", name: "Walk" } })
        // group chats come from a linked number (test/qrGroupChats.test.ts): two rows as its sync writes them
        for (const n of [1, 2]) {
          const id = yield* Ids.newId("gch")
          yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
            sql`INSERT INTO group_chats (id, workspace_id, channel_id, whatsapp_group_id, subject, created_at, updated_at)
              VALUES (${id}, ${user.workspaceId}, ${qrChannel.id}, ${`12036300000${n}`}, ${`Walk ${n}`}, now(), now())`)
        }
        let conversationId: `cnv_${string}` = "cnv_"
        for (const to of RECIPIENTS) {
          for (const body of ["one", "two"]) {
            const sent = yield* byKey.messages.send({ payload: { to, text: { body } }, headers: {} })
            conversationId = sent.conversation_id
          }
        }
        for (const body of ["first", "second"]) {
          yield* byKey.conversations.addNote({ path: { conversationId }, payload: { body } })
        }
        for (const [i, tags] of [["alpha", "beta"], ["beta", "gamma"]].entries()) {
          yield* byAdmin.contacts.create({ payload: { phone_number: `+4917000000${i}0`, tags } })
        }
        for (const name of ["Group A", "Group B"]) {
          yield* byAdmin.contactGroups.create({ payload: { name } })
        }
        const importIds: Array<`imp_${string}`> = []
        for (const n of [1, 2]) {
          const file = Buffer.from(`phone_number\n+4917100000${n}0\n`).toString("base64")
          importIds.push((yield* byAdmin.contactImports.create({ payload: { file }, headers: {} })).id)
          yield* byAdmin.templates.create({
            payload: { slug: `walk_${n}`, name: `Walk ${n}`, category: "utility", body: "Hello {{name}}" }
          })
        }
        // a second sandbox session (the first came with sandboxSetup)
        yield* byKey.sandbox.create()
        let endpointId: `wh_${string}` = "wh_"
        for (const n of [1, 2]) {
          const endpoint = yield* byAdmin.webhooks.create({
            payload: { url: `http://127.0.0.1:9/hooks/${n}`, event_types: ["message.failed"] }
          })
          endpointId = endpoint.id
        }
        for (const _ of [1, 2]) {
          yield* byAdmin.webhooks.test({ path: { endpointId }, payload: {} })
        }
        // an import adds its contact in the background: walk the lists once both have finished,
        // or a contact appears between the whole list and the walk
        for (const importId of importIds) {
          const done = yield* byUser.contactImports.get({ path: { importId } }).pipe(
            Effect.filterOrFail(
              (found) =>
                found.status === "completed" || found.status === "failed",
              (found) =>
                new Error(`import ${importId}: ${found.status}`)
            ),
            Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 300 })
          )
          assert.strictEqual(done.status, "completed")
        }
        // a colleague in the workspace (no invitation flow yet: the membership row)
        const colleague = yield* signUp()
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`INSERT INTO workspace_members (workspace_id, user_id, role, created_at)
            VALUES (${user.workspaceId}, ${colleague.userId}, 'member', now())`)
        const pathIds: Record<string, string> = { conversationId, endpointId, channelId: qrChannel.id }

        // raw: the OpenAPI document is not an endpoint of the contract
        const spec = (yield* request("GET", "/openapi.json")).body
        // a list: a GET answering a page, or any array of `data` (which must then be a page too)
        const lists = Object.entries<any>(spec.paths).flatMap(([path, item]) => {
          const answer = JSON.stringify(item.get?.responses?.["200"] ?? {})
          return answer.includes("PageInfo") || answer.includes(`"data":{"type":"array"`)
            ? [{ template: path, testKeyOnly: item.get["x-test-key-only"] === true }]
            : []
        })
        assert.isAtLeast(lists.length, 15)
        const signedIn = { token: user.accessToken, workspace: user.workspaceId }
        for (const { template, testKeyOnly } of lists) {
          // the sandbox's routes take a test-mode key only (x-test-key-only); the user may call the rest
          const session_ = testKeyOnly ? { token: key } : signedIn
          const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
            assert.isDefined(pathIds[name], `${template}: no fixture for {${name}}`)
            return pathIds[name]!
          })
          // raw: every list route of the served document, by its path: which endpoint is not known here
          const whole = yield* request("GET", `${path}?limit=100`, session_)
          assert.strictEqual(whole.status, 200, `${path}: ${whole.text.slice(0, 300)}`)
          const expected = whole.body.data.map(keyOf)
          assert.isAtLeast(expected.length, 2, `${path}: the fixture gives it at least 2 items`)
          const walked: Array<string> = []
          let after: string | null = null
          for (let pages = 0; pages <= expected.length; pages++) {
            const query: string = after === null ? "?limit=1" : `?limit=1&after=${encodeURIComponent(after)}`
            // raw: a page of a route known only by its path in the served document, the cursor sent as it came
            const page = yield* request("GET", `${path}${query}`, session_)
            assert.strictEqual(page.status, 200, `${path}${query}: ${page.text.slice(0, 300)}`)
            assert.isAtMost(page.body.data.length, 1, path)
            walked.push(...page.body.data.map(keyOf))
            assert.strictEqual(page.body.page.has_more, page.body.page.next_cursor !== null, path)
            after = page.body.page.next_cursor
            if (after === null) {
              break
            }
          }
          assert.isNull(after, `${path}: the walk ends`)
          assert.deepStrictEqual(walked, expected, path)
        }
        // a page of a keyed list refuses a malformed cursor like every list
        // raw: a malformed cursor, which the typed client would not send
        const bad = yield* request("GET", "/v1/contact-tags?after=not-a-cursor", signedIn)
        assert.strictEqual(bad.status, 422)
        // raw: a limit over 100, which the typed client would not send
        const tooMany = yield* request("GET", "/v1/webhook-event-types?limit=101", signedIn)
        assert.strictEqual(tooMany.status, 422)
      }))
  })
})
