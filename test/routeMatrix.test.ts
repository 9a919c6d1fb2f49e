/**
 * Every secured endpoint of the contract, found by reflection (new endpoints are covered without
 * touching this file): no credential is 401; a key without the endpoint's scope is 403 naming it;
 * a key on a session-only route is 403.
 */
import { HttpApi } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Api, Security } from "@switchboard/api"
import { Scopes } from "@switchboard/domain"
import { Context, Effect } from "effect"
import { createKey, envelopeOf, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

interface Route {
  readonly method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE"
  readonly path: string
  readonly scopes: ReadonlyArray<string>
  readonly sessionOnly: boolean
  readonly testKeyOnly: boolean
  /** the path with its parameters filled in with well-formed ids of their kind */
  readonly validPath: string
}

const routes: Array<Route> = []
const publicRoutes: Array<string> = []
HttpApi.reflect(Api.Api, {
  onGroup() {},
  onEndpoint({ endpoint, mergedAnnotations, middleware }) {
    const path = endpoint.path.replace(/:[^/]+/g, "x_01JD7X6F3Q9T2M5N8R4V0W1Y2Z")
    if (!middleware.has(Security.Authentication as any)) {
      publicRoutes.push(`${endpoint.method} ${endpoint.path}`)
      return
    }
    routes.push({
      method: endpoint.method as Route["method"],
      path,
      scopes: Context.get(mergedAnnotations, Security.RequiredScopes),
      sessionOnly: Context.get(mergedAnnotations, Security.SessionOnly),
      testKeyOnly: Context.get(mergedAnnotations, Security.TestKeyOnly),
      validPath: endpoint.path.replace(/:sessionId/g, "sbx_01JD7X6F3Q9T2M5N8R4V0W1Y2Z")
        .replace(/:groupChatId/g, "gch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z")
    })
  }
})

describe("authentication of every route", () => {
  it_has_routes()
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("answers 401 without a credential on every secured route", () =>
      Effect.gen(function*() {
        for (const route of routes) {
          // raw: every route of the contract from one table, with an empty body where one goes
          const reply = yield* request(route.method, route.path, route.method === "GET" ? {} : { body: {} })
          assert.strictEqual(reply.status, 401, `${route.method} ${route.path}`)
          assert.strictEqual(envelopeOf(reply).code, "UNAUTHORIZED", `${route.method} ${route.path}`)
        }
      }))

    it.effect("answers 403 naming the scope when a key lacks it", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const scoped = routes.filter((r) => r.scopes.length > 0 && !r.sessionOnly)
        assert.isAbove(scoped.length, 0)
        for (const route of scoped) {
          const key = yield* createKey(user, { scopes: Scopes.SCOPES.filter((s) => !route.scopes.includes(s)) })
          // raw: every scoped route from one table, with an empty body where one goes
          const reply = yield* request(route.method, route.path, {
            token: key.secret,
            ...(route.method === "GET" ? {} : { body: {} })
          })
          assert.strictEqual(reply.status, 403, `${route.method} ${route.path}`)
          assert.strictEqual(envelopeOf(reply).code, "FORBIDDEN")
          assert.deepStrictEqual(
            envelopeOf(reply).details.required_scopes,
            route.scopes,
            `${route.method} ${route.path}`
          )
        }
      }))

    it.effect("refuses a user session and a live key on test-key-only routes, as the README table says", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const live = yield* createKey(user, { mode: "live", scopes: [...Scopes.SCOPES] })
        const testKeyOnly = routes.filter((r) => r.testKeyOnly)
        assert.deepStrictEqual(testKeyOnly.map((r) => r.validPath.split("/")[2]), Array(8).fill("sandbox"))
        // bodies that decode, so the refusal is the credential's
        const bodies: Record<string, unknown> = {
          verify: { phone_number: "+4915112345678", code: "123456" },
          inbound: { from: "+4915112345678", text: { body: "hi" } },
          "group-chats": { subject: "Orders", participants: ["+4915112345678"] }
        }
        for (const route of testKeyOnly) {
          const body = bodies[route.validPath.split("/").pop()!] ?? {}
          for (const as of [{ token: user.accessToken, workspace: user.workspaceId }, { token: live.secret }]) {
            // raw: every test-key-only route from one table
            const reply = yield* request(route.method, route.validPath, {
              ...as,
              ...(route.method === "GET" ? {} : { body })
            })
            assert.strictEqual(reply.status, 403, `${route.method} ${route.path}`)
            assert.strictEqual(envelopeOf(reply).code, "SANDBOX_TEST_KEY_REQUIRED", `${route.method} ${route.path}`)
          }
        }
      }))

    it.effect("refuses API keys on session-only routes, every route under qr/ among them", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { scopes: [...Scopes.SCOPES] })
        const sessionOnly = routes.filter((r) => r.sessionOnly)
        assert.isAbove(sessionOnly.length, 0)
        // QR pairing is for a signed-in user (docs/QR-CHANNELS.md "QR channels"): no route under qr/ takes a key
        const qr = routes.filter((r) => r.path.includes("/qr/"))
        assert.deepStrictEqual(
          qr.map((r) => r.path.split("/").pop()).sort(),
          ["logout", "safety", "start", "status", "stream"]
        )
        for (const route of qr) assert.include(sessionOnly, route)
        for (const route of sessionOnly) {
          // raw: every session-only route from one table (the SSE stream among them), empty bodies
          const reply = yield* request(route.method, route.path, {
            token: key.secret,
            ...(route.method === "GET" ? {} : { body: {} })
          })
          assert.strictEqual(reply.status, 403, `${route.method} ${route.path}`)
          assert.strictEqual(envelopeOf(reply).code, "FORBIDDEN")
        }
      }))
  })
})

function it_has_routes() {
  // guards against a reflection that silently finds nothing
  assert.isAbove(routes.length, 5)
  assert.include(publicRoutes, "POST /v1/auth/login")
  assert.include(publicRoutes, "GET /health")
  // the conversation routes: reads need messages.read, everything that changes or sends messages.send
  const conversations = routes.filter((r) => r.path.startsWith("/v1/conversations"))
    .map((r) => `${r.method} ${r.path.replace(/x_01JD7X6F3Q9T2M5N8R4V0W1Y2Z/g, "{id}")} ${r.scopes.join(",")}`)
  assert.deepStrictEqual(conversations.sort(), [
    "GET /v1/conversations messages.read",
    "GET /v1/conversations/{id} messages.read",
    "GET /v1/conversations/{id}/messages messages.read",
    "GET /v1/conversations/{id}/notes messages.read",
    "PATCH /v1/conversations/{id} messages.send",
    "POST /v1/conversations/{id}/messages messages.send",
    "POST /v1/conversations/{id}/notes messages.send",
    "POST /v1/conversations/{id}/read messages.send"
  ])
}
