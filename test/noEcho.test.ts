/**
 * No refusal repeats what the client sent (docs/API.md "Errors"): a marker placed in every place a
 * client chooses text (path members, query names and values, unknown members, keys of
 * `metadata`/`attributes`/`variables`, duplicate members, extra path segments, template
 * placeholders, variables and slugs) never comes back in an error, on any route. The only client
 * text an error may repeat is a well-formed id and the names the contract declares; the marker
 * can be neither.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Scopes } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Arbitrary, Effect, FastCheck as fc, Schema } from "effect"
import { MARKER, operations } from "./support/ContractFuzz.js"
import type { Operation } from "./support/ContractFuzz.js"
import { api, createKey, request, sandboxSetup } from "./support/Fixtures.js"
import type { Reply } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

interface Credentials {
  readonly key: string
  readonly session: string
  readonly workspace: string
}

const auth = (op: Operation, c: Credentials) =>
  op.auth === "session" ? { token: c.session, workspace: c.workspace } : op.auth === "key" ? { token: c.key } : {}

/** A body the operation's schema accepts (seeded, so a run repeats), as JSON. */
const validBody = (op: Operation): unknown => {
  if (op.payload === undefined) return undefined
  const [value] = fc.sample(Arbitrary.make(op.payload), { seed: 20261126, numRuns: 1 })
  return JSON.parse(JSON.stringify(Schema.encodeSync(op.payload)(value)))
}

/** `body` with the marker as an unknown member, and as an over-long key in every object it holds. */
const marked = (body: unknown): unknown => {
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(visit)
    if (typeof value !== "object" || value === null) return value
    const copy: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) copy[k] = visit(v)
    copy[`${MARKER}${"k".repeat(70)}`] = MARKER
    return copy
  }
  const out = visit(body ?? {})
  return typeof out === "object" && out !== null && !Array.isArray(out) ? { ...out, [MARKER]: MARKER } : out
}

const lower = MARKER.toLowerCase()

const assertNoEcho = (reply: Reply, label: string) => {
  if (reply.status < 400) return
  assert.notInclude(reply.text.toLowerCase(), lower, `${label}: ${reply.status} ${reply.text.slice(0, 300)}`)
}

let credentials: Credentials | undefined

describe("no echo of client text in errors", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect("signs up the user the requests run as", () =>
      Effect.gen(function*() {
        const { user } = yield* sandboxSetup()
        yield* Effect.flatMap(Operator.Operator, (o) => o.setPlan(user.workspaceId, "growth")).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const key = yield* createKey(user, { mode: "test", scopes: [...Scopes.SCOPES] })
        credentials = { key: key.secret, session: user.accessToken, workspace: user.workspaceId }
      }))

    it.effect("never repeats the marker on any route, wherever the request carries it", () =>
      Effect.gen(function*() {
        const c = credentials!
        let errors = 0
        for (const op of operations) {
          if (op.path.endsWith("/stream")) continue
          const as = auth(op, c)
          const pathOf = (value: string) => op.path.replace(/:[^/]+/g, encodeURIComponent(value))
          const path = op.path.includes(":") ? pathOf(MARKER) : op.path
          const body = validBody(op)
          const hasBody = op.method !== "GET" && op.method !== "DELETE"
          const idem = op.idempotent ? { headers: { "idempotency-key": `${MARKER}-${op.name}` } } : {}
          const replies: Array<[string, Reply]> = []
          // raw: the marker goes where the typed client would not put it, and each answer is searched whole
          const send = (label: string, url: string, options: Parameters<typeof request>[2]) =>
            Effect.map(request(op.method, url, { ...as, ...idem, ...options }), (r) => {
              replies.push([`${op.name} ${label}`, r])
            })
          // path members, query names and values
          yield* send("path", path, hasBody ? { body: body ?? {} } : {})
          yield* send("query", `${path}?${MARKER}=${MARKER}&limit=${MARKER}&after=${MARKER}`, {})
          // unknown members and over-long keys everywhere in an otherwise valid body
          if (hasBody) {
            yield* send("body", op.path.includes(":") ? pathOf("x") : op.path, { body: marked(body) })
            yield* send("duplicate", path, { rawBody: `{"${MARKER}":1,"${MARKER}":2}` })
          }
          // a segment no route has
          yield* send("segment", `${op.path.replace(/:[^/]+/g, "x")}/${MARKER}`, {})
          for (const [label, reply] of replies) {
            assertNoEcho(reply, label)
            if (reply.status >= 400) errors++
          }
        }
        assert.isAbove(errors, 200)
      }), { timeout: 240_000 })

    it.effect("never repeats template placeholders, unknown variables or slugs", () =>
      Effect.gen(function*() {
        const c = credentials!
        const asKey = { token: c.key }
        // raw: each answer below is searched whole for what the request carried
        const placeholder = yield* request("POST", "/v1/templates", {
          ...asKey,
          body: {
            slug: "no_echo",
            name: "No echo",
            category: "utility",
            body: `Hi {{name}}{{${lower}}}`,
            variables: [{ name: "name", required: true }]
          }
        })
        assert.strictEqual(placeholder.status, 422, placeholder.text)
        assertNoEcho(placeholder, "placeholder")
        const created = yield* (yield* api(c.key)).templates.create({
          payload: {
            slug: "no_echo",
            name: "No echo",
            category: "utility",
            body: "Hi {{name}}",
            variables: [{ name: "name", required: true }]
          }
        })
        assert.strictEqual(created.slug, "no_echo")
        const to = "+4915112345678"
        for (
          const template of [
            { slug: "no_echo", variables: { name: "A", [MARKER]: "x" } },
            { slug: "no_echo", variables: { name: "A", [`${MARKER}${"k".repeat(70)}`]: "x" } },
            { slug: `${lower}_slug`, variables: {} }
          ]
        ) {
          // raw: unknown variables and slugs, each answer searched whole
          const reply = yield* request("POST", "/v1/messages", { ...asKey, body: { to, template } })
          assert.isAtLeast(reply.status, 400, reply.text)
          assertNoEcho(reply, JSON.stringify(template))
        }
        // raw: an unknown variable, the answer searched whole
        const testSend = yield* request("POST", `/v1/templates/${created.id}/test-send`, {
          ...asKey,
          body: { to, variables: { [MARKER]: "x" } }
        })
        assert.isAtLeast(testSend.status, 400, testSend.text)
        assertNoEcho(testSend, "test-send")
      }))
  })
})
