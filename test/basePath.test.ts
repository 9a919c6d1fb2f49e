import { assert, describe, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { bodyOf, envelopeOf, PASSWORD, PathPrefix, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

describe("BASE_PATH", () => {
  layer(TestApp.layer({ basePath: "/api" }), { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("serves everything under the prefix and nothing outside it", () =>
      Effect.gen(function*() {
        assert.strictEqual((yield* request("GET", "/api/health")).status, 200)
        const outside = yield* request("GET", "/health")
        assert.strictEqual(outside.status, 404)
        assert.strictEqual(envelopeOf(outside).details.resource, "route")
        const spec = yield* request("GET", "/api/openapi.json")
        assert.deepStrictEqual(bodyOf(Schema.Struct({ servers: Schema.Unknown }), spec).servers, [{ url: "/api" }])
        // the console's page loads its files and calls the API under the prefix
        const page = yield* request("GET", "/api/console")
        assert.strictEqual(page.status, 200)
        assert.include(page.text, `src="/api/console/app.js"`)
        assert.include(page.text, `content="/api"`)
        assert.strictEqual((yield* request("GET", "/api/console/qrcode.mjs")).status, 200)
        assert.strictEqual((yield* request("GET", "/console")).status, 404)
      }))

    it.effect("scopes the refresh cookie to the prefixed auth path", () =>
      Effect.gen(function*() {
        const user = yield* signUp().pipe(Effect.provideService(PathPrefix, "/api"))
        const login = yield* request("POST", "/api/v1/auth/login", { body: { email: user.email, password: PASSWORD } })
        assert.include(login.headers["set-cookie"]!, "Path=/api/v1/auth")
      }))
  })
})
