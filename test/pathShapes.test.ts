/**
 * A path is routed as it is (docs/API.md, hostile input): a raw `;` or `#`, or any character a
 * path segment may not hold unencoded, is 404 `NOT_FOUND` in the envelope on every route, before
 * any action runs; `%3B` stays part of its segment. The router underneath cuts a path at `;` and
 * `#`, so `DELETE /v1/contact-groups/{g};x=1/members/{c}` used to delete the whole group.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Scopes } from "@switchboard/domain"
import { Effect, Layer, Logger } from "effect"
import { operations, shapedPaths } from "./support/ContractFuzz.js"
import { createKey, request, sandboxSetup } from "./support/Fixtures.js"
import { port, rawRequest } from "./support/RawHttp.js"
import type { RawReply } from "./support/RawHttp.js"
import * as TestApp from "./support/TestApp.js"

const logged: Array<string> = []
const captureLogs = Logger.add(Logger.map(Logger.logfmtLogger, (line) => {
  logged.push(line)
}))

/** One request with `target` on the request line exactly as given (the typed client would encode it). */
const raw = (method: string, target: string, headers: Record<string, string> = {}, body?: string) =>
  Effect.flatMap(port, (p) => rawRequest(p, method, target, { headers, ...(body === undefined ? {} : { body }) }))

const auth = (token: string, workspace?: string): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  ...(workspace === undefined ? {} : { "x-workspace-id": workspace })
})

const assertNoRoute = (reply: RawReply, label: string) => {
  // Node's own parser refuses some bytes on the request line first: 400 in the same envelope
  assert.include([400, 404], reply.status, `${label}: ${reply.status} ${reply.text.slice(0, 200)}`)
  assert.deepStrictEqual(Object.keys(Object(reply.body)), ["error"], label)
  assert.strictEqual(reply.body.error.code, reply.status === 404 ? "NOT_FOUND" : "BAD_REQUEST", label)
}

const json = { "content-type": "application/json" }

describe("paths with characters a segment may not hold", () => {
  layer(TestApp.layer({ logRequests: true }).pipe(Layer.provide(captureLogs)), {
    excludeTestServices: true,
    timeout: 180_000
  })((it) => {
    it.effect("keeps the group when a member's removal carries ;x=1 after the group id", () =>
      Effect.gen(function*() {
        const { user } = yield* sandboxSetup()
        const key = (yield* createKey(user, { scopes: [...Scopes.SCOPES] })).secret
        // raw: setup of a raw-HTTP-by-design file (path shapes), kept as it was
        const contact = yield* request("POST", "/v1/contacts", { token: key, body: { phone_number: "+4915112340001" } })
        assert.strictEqual(contact.status, 201, contact.text)
        // raw: setup of a raw-HTTP-by-design file (path shapes), kept as it was
        const group = yield* request("POST", "/v1/contact-groups", { token: key, body: { name: "Shapes" } })
        assert.strictEqual(group.status, 201, group.text)
        const g = group.body.id as string
        const c = contact.body.id as string
        // raw: setup of a raw-HTTP-by-design file (path shapes), kept as it was
        const added = yield* request("POST", `/v1/contact-groups/${g}/members`, {
          token: key,
          body: { contact_ids: [c] }
        })
        assert.strictEqual(added.status, 200, added.text)

        logged.length = 0
        for (const target of [`/v1/contact-groups/${g};x=1/members/${c}`, `/v1/contact-groups/${g}#/members/${c}`]) {
          const reply = yield* raw("DELETE", target, auth(key))
          assert.strictEqual(reply.status, 404, reply.text)
          assert.strictEqual(reply.body.error.code, "NOT_FOUND")
          assert.strictEqual(reply.body.error.details.resource, "route")
          assert.strictEqual(reply.body.error.details.reason, "path_character")
          assert.notInclude(reply.text, g)
        }
        // raw: reads the group after hostile paths, as the rest of this raw-by-design file
        const kept = yield* request("GET", `/v1/contact-groups/${g}`, { token: key })
        assert.strictEqual(kept.status, 200, kept.text)
        assert.strictEqual(kept.body.member_count, 1)

        // the access log names what was done, answered 404: the path with the segment that is
        // no id masked (LoggedUrl), the route unmatched
        const access = logged.filter((line) =>
          line.includes("Sent HTTP response") && line.includes(`http.url=/v1/contact-groups/*/members/${c}`)
        )
        assert.strictEqual(access.length, 2, logged.join("\n"))
        assert.include(access[0]!, "http.status=404")
        assert.include(access[0]!, "http.route=unmatched")
      }))

    it.effect("reads no channel and creates no session through a path cut at ;", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const channel = session.channel_id
        const read = yield* raw("GET", `/v1/channels/${channel};/capabilities`, auth(key))
        assert.strictEqual(read.status, 404, read.text)
        assert.notInclude(read.text, channel)
        const inbound = yield* raw(
          "POST",
          `/v1/sandbox/sessions;/${session.id}/inbound`,
          { ...auth(key), ...json },
          JSON.stringify({ from: "+4915112345678", text: { body: "hi" } })
        )
        assert.strictEqual(inbound.status, 404, inbound.text)
        assert.strictEqual(inbound.body.error.code, "NOT_FOUND")
      }))

    it.effect(
      "answers every route with ;, #, or a character that must be encoded in any segment with 404",
      () =>
        Effect.gen(function*() {
          const { user } = yield* sandboxSetup()
          const key = (yield* createKey(user, { mode: "test", scopes: [...Scopes.SCOPES] })).secret
          let sent = 0
          for (const [n, op] of operations.entries()) {
            const path = op.path.replace(/:[^/]+/g, "x_01JD7X6F3Q9T2M5N8R4V0W1Y2Z")
            const headers = op.auth === "session" ? auth(user.accessToken, user.workspaceId) : auth(key)
            for (const shaped of shapedPaths(path, n)) {
              const body = op.method === "GET" || op.method === "DELETE" ? undefined : "{}"
              const reply = yield* raw(
                op.method,
                shaped.path,
                body === undefined ? headers : { ...headers, ...json },
                body
              )
              assertNoRoute(reply, `${op.method} ${shaped.label}`)
              sent++
            }
          }
          assert.isAbove(sent, 500)
          // raw: the server still answers after hundreds of hostile paths (raw-by-design file)
          const health = yield* request("GET", "/health")
          assert.strictEqual(health.status, 200)
        }),
      { timeout: 240_000 }
    )

    it.effect("keeps %3B inside its segment: the id is refused, not cut", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const reply = yield* raw("GET", `/v1/channels/${session.channel_id}%3B/capabilities`, auth(key))
        assert.include([404, 422], reply.status, reply.text)
        assert.notStrictEqual(reply.body.error.details.reason, "path_character")
        assert.notInclude(reply.text, session.channel_id)
        const escaped = yield* raw("GET", `/v1/channels/${session.channel_id}%23/capabilities`, auth(key))
        assert.include([404, 422], escaped.status, escaped.text)
        assert.notStrictEqual(escaped.body.error.details.reason, "path_character")
        const plain = yield* raw("GET", `/v1/channels/${session.channel_id}/capabilities`, auth(key))
        assert.strictEqual(plain.status, 200, plain.text)
      }))
  })
})
