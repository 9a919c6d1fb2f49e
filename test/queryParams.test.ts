/**
 * The query string is validated like a body (docs/API.md "Errors"): an unknown parameter on any
 * operation of the served OpenAPI document is 422 at its position in the query, never repeating
 * its name or value; a declared parameter given twice is 422 at its name; a filter value outside
 * an enumeration is one issue naming the allowed values.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MARKER } from "./support/ContractFuzz.js"
import { createKey, request, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

let key = ""

describe("query parameters", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("signs up the user the requests run as", () =>
      Effect.gen(function*() {
        const { user } = yield* sandboxSetup()
        key = (yield* createKey(user, { mode: "test" })).secret
      }))

    it.effect(
      "refuses an unknown query parameter on every operation of the served OpenAPI document",
      () =>
        Effect.gen(function*() {
          // raw: the OpenAPI document is not an endpoint of the typed client
          const spec = (yield* request("GET", "/openapi.json")).body
          let walked = 0
          for (const [path, item] of Object.entries(spec.paths) as Array<[string, Record<string, any>]>) {
            for (const [method, op] of Object.entries(item)) {
              // the probes ignore any query (next test)
              if (path === "/health" || path === "/ready") continue
              const declared = ((op.parameters ?? []) as Array<{ in: string; name: string }>)
                .filter((p) => p.in === "query").map((p) => p.name)
              const url = path.replace(/\{\w+\}/g, "x_00000000000000000000000000")
              // raw: a parameter no operation declares, name and value the client's own text
              const reply = yield* request(method.toUpperCase() as "GET", `${url}?limit=1&${MARKER}=${MARKER}`, {
                token: key
              })
              const label = `${method.toUpperCase()} ${path}: ${reply.status} ${reply.text.slice(0, 300)}`
              assert.strictEqual(reply.status, 422, label)
              assert.strictEqual(reply.body.error.code, "VALIDATION_ERROR", label)
              const issues = reply.body.error.details.issues as Array<{ path: Array<unknown>; message: string }>
              // `limit` comes first: refused too where the operation does not declare it
              const expected = declared.includes("limit") ? [["query", 1]] : [["query", 0], ["query", 1]]
              assert.deepStrictEqual(issues.map((i) => i.path), expected, label)
              assert.notInclude(reply.text, MARKER, label)
              for (const name of declared) assert.include(issues[0]!.message, name, label)
              walked++
            }
          }
          assert.isAbove(walked, 70)
        }),
      { timeout: 60_000 }
    )

    it.effect("lets an uptime checker's own query reach the liveness and readiness probes", () =>
      Effect.gen(function*() {
        for (const path of ["/health?t=1700000000", "/ready?cache=no&cache=no"]) {
          // raw: a probe with a query the contract does not declare
          const reply = yield* request("GET", path)
          assert.strictEqual(reply.status, 200, `${path}: ${reply.text.slice(0, 200)}`)
        }
      }))

    it.effect("refuses a list filter the route does not have instead of answering every message", () =>
      Effect.gen(function*() {
        for (const query of ["type=image", "to=%2B4915112345678", "contact_id=cnt_x", "foo="]) {
          // raw: filters GET /v1/messages does not take
          const reply = yield* request("GET", `/v1/messages?${query}`, { token: key })
          assert.strictEqual(reply.status, 422, `${query}: ${reply.text}`)
          assert.deepStrictEqual(reply.body.error.details.issues, [{
            path: ["query", 0],
            message:
              "Unknown query parameter; this operation takes limit, after, status, state, direction, category, channel_id"
          }])
          assert.notInclude(reply.text, "4915112345678")
        }
      }))

    it.effect("refuses a parameter given twice at its name", () =>
      Effect.gen(function*() {
        // raw: a repeated parameter, which the typed client never sends
        const reply = yield* request("GET", "/v1/messages?limit=1&status=sent&limit=2&limit=3", { token: key })
        assert.strictEqual(reply.status, 422, reply.text)
        assert.deepStrictEqual(reply.body.error.details.issues, [{
          path: ["limit"],
          message: "Query parameter given more than once; give it once"
        }])
      }))

    it.effect("names the allowed values of an enumeration in one issue", () =>
      Effect.gen(function*() {
        // raw: a status no message has
        const reply = yield* request("GET", `/v1/messages?state=${MARKER}`, { token: key })
        assert.strictEqual(reply.status, 422, reply.text)
        const issues = reply.body.error.details.issues as Array<{ path: Array<unknown>; message: string }>
        assert.lengthOf(issues, 1, reply.text)
        assert.deepStrictEqual(issues[0]!.path, ["state"])
        assert.strictEqual(
          issues[0]!.message,
          "Expected one of \"created\", \"queued\", \"dispatching\", \"provider_accepted\", \"sent\", \"delivered\", \"read\", \"failed_retryable\", \"failed_permanent\", \"cancelled\", \"expired\""
        )
        assert.notInclude(reply.text, MARKER)
      }))

    it.effect("still answers the filters a route declares", () =>
      Effect.gen(function*() {
        // raw: the same URL shape the tests above refuse, with declared names only
        const reply = yield* request("GET", "/v1/messages?limit=1&state=sent&direction=outbound", { token: key })
        assert.strictEqual(reply.status, 200, reply.text)
      }))
  })
})
