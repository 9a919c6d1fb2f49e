/**
 * Every list route of the served OpenAPI document answers the list envelope and pages with
 * `limit` and `after` (docs/API.md): walked with `limit=1`, following `page.next_cursor` to the
 * end, it yields each item once, in the order one page of 100 shows. A new list route needs a
 * fixture below (the test fails on a list it cannot fill), so the next one cannot regress.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { Effect, Schedule } from "effect"
import { createKey, request, sandboxSetup, signUp } from "./support/Fixtures.js"
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
        const created = (reply: { readonly status: number; readonly text: string }, what: string) =>
          assert.oneOf(reply.status, [200, 201, 202], `${what}: ${reply.text.slice(0, 300)}`)

        created(yield* request("POST", "/v1/channels", { token: live, body: { provider: "qr", name: "Walk" } }), "qr")
        let conversationId = ""
        for (const to of RECIPIENTS) {
          for (const body of ["one", "two"]) {
            const sent = yield* request("POST", "/v1/messages", { token: key, body: { to, text: { body } } })
            created(sent, "send")
            conversationId = sent.body.conversation_id
          }
        }
        for (const body of ["first", "second"]) {
          created(
            yield* request("POST", `/v1/conversations/${conversationId}/notes`, { token: key, body: { body } }),
            "note"
          )
        }
        for (const [i, tags] of [["alpha", "beta"], ["beta", "gamma"]].entries()) {
          created(
            yield* request("POST", "/v1/contacts", { token: admin, body: { phone_number: `+4917000000${i}0`, tags } }),
            "contact"
          )
        }
        for (const name of ["Group A", "Group B"]) {
          created(yield* request("POST", "/v1/contact-groups", { token: admin, body: { name } }), "group")
        }
        const importIds: Array<string> = []
        for (const n of [1, 2]) {
          const file = Buffer.from(`phone_number\n+4917100000${n}0\n`).toString("base64")
          const queued = yield* request("POST", "/v1/contacts/imports", { token: admin, body: { file } })
          created(queued, "import")
          importIds.push(queued.body.id)
          created(
            yield* request("POST", "/v1/templates", {
              token: admin,
              body: { slug: `walk_${n}`, name: `Walk ${n}`, category: "utility", body: "Hello {{name}}" }
            }),
            "template"
          )
        }
        // a second sandbox session (the first came with sandboxSetup)
        created(yield* request("POST", "/v1/sandbox/sessions", { token: key }), "sandbox session")
        let endpointId = ""
        for (const n of [1, 2]) {
          const endpoint = yield* request("POST", "/v1/webhook-endpoints", {
            token: admin,
            body: { url: `http://127.0.0.1:9/hooks/${n}`, event_types: ["message.failed"] }
          })
          created(endpoint, "endpoint")
          endpointId = endpoint.body.id
        }
        for (const _ of [1, 2]) {
          created(yield* request("POST", `/v1/webhook-endpoints/${endpointId}/test`, { token: admin }), "test delivery")
        }
        // an import adds its contact in the background: walk the lists once both have finished,
        // or a contact appears between the whole list and the walk
        for (const id of importIds) {
          const done = yield* request("GET", `/v1/contacts/imports/${id}`, {
            token: user.accessToken,
            workspace: user.workspaceId
          }).pipe(
            Effect.filterOrFail(
              (reply) => reply.body.status === "completed" || reply.body.status === "failed",
              (reply) => new Error(`import ${id}: ${reply.status} ${reply.text.slice(0, 300)}`)
            ),
            Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 300 })
          )
          assert.strictEqual(done.body.status, "completed")
        }
        // a colleague in the workspace (no invitation flow yet: the membership row)
        const colleague = yield* signUp()
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`INSERT INTO workspace_members (workspace_id, user_id, role, created_at)
            VALUES (${user.workspaceId}, ${colleague.userId}, 'member', now())`)
        const pathIds: Record<string, string> = { conversationId, endpointId }

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
          const whole = yield* request("GET", `${path}?limit=100`, session_)
          assert.strictEqual(whole.status, 200, `${path}: ${whole.text.slice(0, 300)}`)
          const expected = whole.body.data.map(keyOf)
          assert.isAtLeast(expected.length, 2, `${path}: the fixture gives it at least 2 items`)
          const walked: Array<string> = []
          let after: string | null = null
          for (let pages = 0; pages <= expected.length; pages++) {
            const query: string = after === null ? "?limit=1" : `?limit=1&after=${encodeURIComponent(after)}`
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
        const bad = yield* request("GET", "/v1/contact-tags?after=not-a-cursor", signedIn)
        assert.strictEqual(bad.status, 422)
        const tooMany = yield* request("GET", "/v1/webhook-event-types?limit=101", signedIn)
        assert.strictEqual(tooMany.status, 422)
      }))
  })
})
