import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { api, bodyOf, envelopeOf, PASSWORD, PathPrefix, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

describe("BASE_PATH", () => {
  layer(TestApp.layer({ basePath: "/api" }), { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("serves everything under the prefix and nothing outside it", () =>
      Effect.gen(function*() {
        // the typed client with its base URL under the prefix: prepended before the test client adds
        // the server's origin (api() under PathPrefix would add it after the origin)
        const underPrefix = HttpClient.mapRequestInput(
          yield* HttpClient.HttpClient,
          HttpClientRequest.prependUrl("/api")
        )
        const client = yield* api().pipe(Effect.provideService(HttpClient.HttpClient, underPrefix))
        const [health, response] = yield* client.health.health({ withResponse: true })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(health.status, "ok")
        // raw: the unprefixed path is outside the base URL the typed client is made with
        const outside = yield* request("GET", "/health")
        assert.strictEqual(outside.status, 404)
        assert.strictEqual(envelopeOf(outside).details.resource, "route")
        // raw: the OpenAPI document is not an endpoint of the typed client
        const spec = yield* request("GET", "/api/openapi.json")
        assert.deepStrictEqual(bodyOf(Schema.Struct({ servers: Schema.Unknown }), spec).servers, [{ url: "/api" }])
        // the console's page loads its files and calls the API under the prefix
        // raw: the console's page and static files are not endpoints of the typed client
        const page = yield* request("GET", "/api/console")
        assert.strictEqual(page.status, 200)
        assert.include(page.text, `src="/api/console/app.js"`)
        assert.include(page.text, `content="/api"`)
        // raw: a console file
        assert.strictEqual((yield* request("GET", "/api/console/qrcode.mjs")).status, 200)
        // raw: the console outside the prefix
        assert.strictEqual((yield* request("GET", "/console")).status, 404)
      }))

    it.effect("scopes the refresh cookie to the prefixed auth path", () =>
      Effect.gen(function*() {
        const user = yield* signUp().pipe(Effect.provideService(PathPrefix, "/api"))
        // raw: the test reads the Set-Cookie header, which the typed client does not show
        const login = yield* request("POST", "/api/v1/auth/login", { body: { email: user.email, password: PASSWORD } })
        assert.include(login.headers["set-cookie"]!, "Path=/api/v1/auth")
      }))
  })
})
