/**
 * The access log never holds what a client placed in a path or a query (docs/OPERATING.md
 * "Logs"): a phone number as a path segment, a query parameter's name or value. It names the
 * route template (`http.route`) and keeps the contract's own segments, ids and parameter names. A healthy
 * probe poll (`/health`, `/ready` answering 2xx) is a DEBUG line, not INFO.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { createKey, request, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const logged: Array<string> = []
const captureLogs = Logger.add(Logger.map(Logger.logfmtLogger, (line) => {
  logged.push(line)
}))

const PHONE = "4915112345678"

describe("the access log", () => {
  layer(TestApp.layer({ logRequests: true }).pipe(Layer.provide(captureLogs)), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.effect("masks phone numbers in path segments and query names and values, and names the route", () =>
      Effect.gen(function*() {
        const { user } = yield* sandboxSetup()
        const key = (yield* createKey(user, { scopes: ["contacts.read", "messages.read"] })).secret
        logged.length = 0
        // raw: a phone number where the contract puts an id, a parameter name, a value
        yield* request("GET", `/v1/contacts/%2B${PHONE}`, { token: key })
        yield* request("GET", `/v1/contacts?q=%2B${PHONE}&limit=5`, { token: key })
        yield* request("GET", `/v1/messages?%2B${PHONE}=1`, { token: key })
        yield* request("GET", `/v1/${PHONE}/messages`, { token: key })
        const access = logged.filter((line) => line.includes("Sent HTTP response"))
        assert.lengthOf(access, 4, logged.join("\n"))
        for (const line of logged) assert.notInclude(line, PHONE)
        assert.include(access[0]!, "http.url=/v1/contacts/*")
        assert.include(access[0]!, "http.route=/v1/contacts/:contactId")
        assert.include(access[1]!, "http.url=\"/v1/contacts?q=*&limit=*\"")
        assert.include(access[1]!, "http.route=/v1/contacts ")
        assert.include(access[2]!, "http.url=\"/v1/messages?*=*\"")
        assert.include(access[3]!, "http.url=/v1/*/messages")
        assert.include(access[3]!, "http.route=unmatched")
      }))

    it.effect("logs a healthy probe's poll at DEBUG, so polls every few seconds do not fill the INFO log", () =>
      Effect.gen(function*() {
        logged.length = 0
        assert.strictEqual((yield* request("GET", "/health")).status, 200)
        assert.strictEqual((yield* request("GET", "/ready")).status, 200)
        // an ordinary request is still an INFO line
        assert.strictEqual((yield* request("GET", "/v1/messages")).status, 401)
        const access = logged.filter((line) => line.includes("Sent HTTP response"))
        assert.lengthOf(access, 1, logged.join("\n"))
        assert.include(access[0]!, "level=INFO")
        assert.include(access[0]!, "http.url=/v1/messages")
      }))
  })
})

describe("the access log at DEBUG", () => {
  layer(
    TestApp.layer({ logRequests: true }).pipe(
      Layer.provide(captureLogs),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Debug))
    ),
    { excludeTestServices: true, timeout: 120_000 }
  )((it) => {
    it.effect("holds the healthy probes' polls", () =>
      Effect.gen(function*() {
        logged.length = 0
        assert.strictEqual((yield* request("GET", "/ready")).status, 200)
        const access = logged.filter((line) => line.includes("Sent HTTP response"))
        assert.lengthOf(access, 1, logged.join("\n"))
        assert.include(access[0]!, "level=DEBUG")
        assert.include(access[0]!, "http.url=/ready")
      }))
  })
})
