import { assert, describe, layer } from "@effect/vitest"
import { RouteTable } from "@switchboard/service-api"
import { Effect } from "effect"
import { api, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

describe("OpenAPI and docs", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("describes the contract as OpenAPI 3.1, version 1.0.0, with bearer security and envelopes", () =>
      Effect.gen(function*() {
        // raw: the OpenAPI document is not an endpoint of the typed client
        const reply = yield* request("GET", "/openapi.json")
        assert.strictEqual(reply.status, 200)
        const spec = reply.body
        assert.match(spec.openapi, /^3\.1/)
        assert.strictEqual(spec.info.version, "1.0.0")
        assert.deepStrictEqual(spec.components.securitySchemes.bearer.type, "http")
        assert.strictEqual(spec.components.securitySchemes.bearer.scheme, "bearer")
        const operations = Object.entries(spec.paths).flatMap(([path, item]: [string, any]) =>
          Object.entries(item).map(([method, op]: [string, any]) => ({ path, method, op }))
        )
        assert.isAbove(operations.length, 8)
        for (const { method, op, path } of operations) {
          assert.notInclude(JSON.stringify(op.responses), "HttpApiDecodeError", `${method} ${path}`)
          if (op.security?.length) {
            assert.isArray(op["x-required-scopes"] ?? [], `${method} ${path}`)
            assert.include(JSON.stringify(op.responses["401"]), "Unauthorized", `${method} ${path}`)
            assert.isDefined(op.parameters?.find((p: any) => p.name === "X-Workspace-Id"), `${method} ${path}`)
          }
        }
        const send = spec.paths["/v1/api-keys"].get
        assert.deepStrictEqual(send["x-required-scopes"], ["workspace.read"])
        assert.isTrue(spec.paths["/v1/api-keys"].post["x-session-only"])
        // subscriptions are refused by the use-case (details.reason), yet documented as a list
        assert.lengthOf(spec.components.schemas.EventTypeSubscription.enum, 32)
        assert.include(spec.components.schemas.EventTypeSubscription.enum, "*")
        const validation = JSON.stringify(spec.components.schemas.ValidationError)
        assert.include(validation, "VALIDATION_ERROR")
        assert.include(validation, "issues")
      }))

    it.effect("shows every operation's access flags exactly as the route table that enforces them holds them", () =>
      Effect.gen(function*() {
        // raw: the OpenAPI document is not an endpoint of the typed client
        const spec = (yield* request("GET", "/openapi.json")).body
        const seen = new Set<string>()
        for (const [path, item] of Object.entries(spec.paths) as Array<[string, Record<string, any>]>) {
          for (const [method, op] of Object.entries(item)) {
            const key = `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`
            const rule = RouteTable.routeTable.requirements.get(key)
            assert.isDefined(rule, key)
            seen.add(key)
            assert.deepStrictEqual(op["x-required-scopes"] ?? [], rule!.scopes, `${key} x-required-scopes`)
            assert.strictEqual(op["x-session-only"] ?? false, rule!.sessionOnly, `${key} x-session-only`)
            assert.strictEqual(op["x-test-key-only"] ?? false, rule!.testKeyOnly, `${key} x-test-key-only`)
            assert.strictEqual(op["x-rate-limit-rule"] ?? null, rule!.rateLimit, `${key} x-rate-limit-rule`)
          }
        }
        assert.deepStrictEqual([...seen].sort(), [...RouteTable.routeTable.requirements.keys()].sort())
        // the flags that used to be lost: one annotation replaced the other
        const flagged = (name: string) =>
          [...seen].filter((key) =>
            RouteTable.routeTable.requirements.get(key)![
              name as "sessionOnly"
            ]
          )
        // only the sandbox routes are test-key-only (six with the session list the quickstart uses,
        // and the two of its simulated group chats)
        assert.isTrue(flagged("testKeyOnly").every((key) => key.includes("/v1/sandbox/")))
        assert.lengthOf(flagged("testKeyOnly"), 8)
        assert.isTrue(spec.paths["/v1/channels/{channelId}/qr/start"].post["x-session-only"])
        assert.strictEqual(spec.paths["/v1/channels/{channelId}/qr/start"].post["x-rate-limit-rule"], "qr_start")
        assert.deepStrictEqual(spec.paths["/v1/channels/{channelId}/qr/start"].post["x-required-scopes"], [
          "channels.manage"
        ])
      }))

    it.effect("marks a request body optional exactly where the server needs none", () =>
      Effect.gen(function*() {
        // raw: the OpenAPI document is not an endpoint of the typed client
        const spec = (yield* request("GET", "/openapi.json")).body
        const optional: Array<string> = []
        for (const [path, item] of Object.entries(spec.paths) as Array<[string, Record<string, any>]>) {
          for (const [method, op] of Object.entries(item)) {
            if (op.requestBody === undefined) continue
            assert.isBoolean(op.requestBody.required, `${method} ${path}`)
            if (!op.requestBody.required) optional.push(`${method.toUpperCase()} ${path}`)
          }
        }
        // no body is `{}` on the two action routes (contractGaps.test.ts sends none to the
        // webhook test; qrPairingCode.test.ts to qr/start); a refresh reads its cookie instead
        assert.deepStrictEqual(optional.sort(), [
          "POST /v1/auth/refresh",
          "POST /v1/channels/{channelId}/qr/start",
          "POST /v1/webhook-endpoints/{endpointId}/test"
        ])
        const start = spec.paths["/v1/channels/{channelId}/qr/start"].post.requestBody
        assert.include(start.description, "no body")
        assert.strictEqual(
          start.content["application/json"].schema.anyOf[0].$ref,
          "#/components/schemas/StartPairingRequest"
        )
        // as the server reads it: a qr/start without a body gets past its validation (an archived
        // channel's 409, where a body it refuses would be 422)
        const user = yield* signUp()
        const client = yield* api(user.accessToken, user.workspaceId)
        const channel = yield* client.channels.create({ payload: { provider: "qr", name: "Optional body" } })
        yield* client.channels.archive({ path: { channelId: channel.id } })
        // raw: a request without a body, which the typed client does not send (it sends `null`)
        const bodiless = yield* request("POST", `/v1/channels/${channel.id}/qr/start`, {
          token: user.accessToken,
          workspace: user.workspaceId
        })
        assert.strictEqual(bodiless.status, 409, bodiless.text)
        assert.strictEqual(bodiless.body.error.details.reason, "channel_archived")
      }))

    it.effect("serves an offline docs page (no CDN, no external fonts)", () =>
      Effect.gen(function*() {
        // raw: the docs page is not an endpoint of the typed client, and the test reads its HTML
        const reply = yield* request("GET", "/docs")
        assert.strictEqual(reply.status, 200)
        assert.include(reply.headers["content-type"]!, "text/html")
        assert.notMatch(reply.text, /<script[^>]+src=["']https?:/i)
        assert.notMatch(reply.text, /<link[^>]+href=["']https?:/i)
        assert.notMatch(reply.text, /fonts\.(googleapis|scalar)\.com|cdn\.jsdelivr|unpkg\.com/)
      }))
  })
})
