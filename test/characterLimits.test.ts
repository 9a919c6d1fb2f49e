/**
 * Every character limit of the contract counts Unicode code points (docs/API.md): an emoji
 * outside the Basic Multilingual Plane is one character, though JavaScript sees two UTF-16 units.
 * Each limit is tried at its boundary with such characters: exactly the limit is taken, one more
 * is 422 naming the member.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, createKey, request, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"
const EMOJI = "\u{1F600}" // 😀: one code point, two UTF-16 units
const emoji = (n: number) => EMOJI.repeat(n)

describe("character limits count code points", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("takes exactly the limit in astral characters on every kind of text, and refuses one more", () =>
      Effect.gen(function*() {
        const { key, user } = yield* sandboxSetup()
        const admin =
          (yield* createKey(user, { mode: "test", scopes: ["templates.manage", "contacts.manage", "webhooks.manage"] }))
            .secret
        const sent = yield* (yield* api(key)).messages.send({
          payload: { to: TO, text: { body: emoji(4096) } },
          headers: {}
        })
        assert.strictEqual(sent.text.body, emoji(4096))
        const cases: ReadonlyArray<{
          readonly what: string
          readonly token: string
          readonly path: string
          readonly body: (n: number) => unknown
          readonly limit: number
          readonly member: ReadonlyArray<string>
        }> = [
          {
            what: "text body",
            token: key,
            path: "/v1/messages",
            body: (n) => ({ to: TO, text: { body: emoji(n) } }),
            limit: 4096,
            member: ["text", "body"]
          },
          {
            what: "note",
            token: key,
            path: `/v1/conversations/${sent.conversation_id}/notes`,
            body: (n) => ({ body: emoji(n) }),
            limit: 4096,
            member: ["body"]
          },
          {
            what: "contact name",
            token: admin,
            path: "/v1/contacts",
            body: (n) => ({ phone_number: `+49151${String(n).padStart(8, "0")}`, name: emoji(n) }),
            limit: 256,
            member: ["name"]
          },
          {
            what: "contact attribute value",
            token: admin,
            path: "/v1/contacts",
            body: (n) => ({ phone_number: `+49152${String(n).padStart(8, "0")}`, attributes: { note: emoji(n) } }),
            limit: 1024,
            // an attribute's key is the client's own name: the issue stands at the map that holds it
            member: ["attributes"]
          },
          {
            what: "contact group name",
            token: admin,
            path: "/v1/contact-groups",
            body: (n) => ({ name: emoji(n) }),
            limit: 64,
            member: ["name"]
          },
          {
            what: "template name",
            token: admin,
            path: "/v1/templates",
            body: (n) => ({ slug: `name_${n}`, name: emoji(n), category: "utility", body: "Hi" }),
            limit: 128,
            member: ["name"]
          },
          {
            what: "template body",
            token: admin,
            path: "/v1/templates",
            body: (n) => ({ slug: `body_${n}`, name: "t", category: "utility", body: emoji(n) }),
            limit: 1024,
            member: ["body"]
          },
          {
            what: "webhook endpoint description",
            token: admin,
            path: "/v1/webhook-endpoints",
            body: (n) => ({ url: "http://127.0.0.1:9/hooks", event_types: ["*"], description: emoji(n) }),
            limit: 500,
            member: ["description"]
          }
        ]
        for (const c of cases) {
          // raw: one table of routes and bodies for every limit (the same bodies go one over it below)
          const taken = yield* request("POST", c.path, { token: c.token, body: c.body(c.limit) })
          assert.strictEqual(taken.status, 201, `${c.what} of ${c.limit} characters: ${taken.text.slice(0, 300)}`)
          // raw: one more than the limit, which the typed client refuses before sending
          const refused = yield* request("POST", c.path, { token: c.token, body: c.body(c.limit + 1) })
          assert.strictEqual(refused.status, 422, `${c.what} of ${c.limit + 1} characters`)
          assert.deepStrictEqual(refused.body.error.details.issues[0].path, c.member, c.what)
          assert.include(refused.body.error.details.issues[0].message, `${c.limit} characters`, c.what)
        }
      }))
  })
})
