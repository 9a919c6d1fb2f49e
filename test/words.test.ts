/**
 * Words a person reads (docs/API.md "Errors"): counts agree with their number ("1 webhook
 * endpoint", "1 failure in a row"), a refusal at a plan limit says what to do next and where the
 * limits are written down, and the console names a test delivery as a test event.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { api, createKey, refused, request, sandboxSetup, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

interface ConsoleWords {
  readonly count: (n: number, one: string, many?: string) => string
  readonly failuresInARow: (n: number) => string
  readonly deliveryEvent: (d: { readonly is_test: boolean; readonly event_type: string }) => string
}

/** The console's own module (bundled into the page by npm run build). */
const words = Effect.promise(() =>
  import(
    pathToFileURL(join(import.meta.dirname, "..", "services", "api", "console", "src", "words.ts")).href
  ) as Promise<
    ConsoleWords
  >
)

describe("words a person reads", () => {
  it.effect("the console counts in the singular for one and names a test delivery", () =>
    Effect.gen(function*() {
      const w = yield* words
      assert.strictEqual(w.failuresInARow(1), "1 failure in a row")
      assert.strictEqual(w.failuresInARow(3), "3 failures in a row")
      assert.strictEqual(w.count(1, "endpoint"), "1 endpoint")
      assert.strictEqual(
        w.deliveryEvent({ is_test: true, event_type: "message.received" }),
        "Test event (message.received)"
      )
      assert.strictEqual(w.deliveryEvent({ is_test: false, event_type: "message.received" }), "message.received")
    }))

  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a plan limit of one is said in the singular, with what to do and where limits are written", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = (yield* createKey(user, { scopes: ["webhooks.manage"] })).secret
        const body = { url: "http://127.0.0.1:9/hooks", event_types: ["*"] }
        // raw: the refusal's whole message is what the test reads
        assert.strictEqual((yield* request("POST", "/v1/webhook-endpoints", { token: key, body })).status, 201)
        const second = yield* request("POST", "/v1/webhook-endpoints", { token: key, body })
        assert.strictEqual(second.status, 409, second.text)
        assert.strictEqual(
          second.body.error.message,
          "The plan allows 1 webhook endpoint; delete an endpoint you no longer use (DELETE /v1/webhook-endpoints/{id}) (GET /v1/plan shows your limits; docs/LIMITS.md \"Plans\")"
        )
      }))
  })

  layer(TestApp.layer({}, { webhooks: { allowPrivateTargets: false } }), {
    excludeTestServices: true,
    timeout: 120_000
  })(
    (it) => {
      it.effect("a media URL on this machine is refused naming the development flag and the page that explains", () =>
        Effect.gen(function*() {
          const { key } = yield* sandboxSetup(["+4915112345678"])
          const client = yield* api(key)
          const reply = yield* refused(client.messages.send({
            payload: { to: "+4915112345678", image: { url: "http://127.0.0.1/a.png" } },
            headers: {}
          }))
          assert.strictEqual(reply.status, 422)
          assert.strictEqual(reply.details["refusal"], "private_address")
          assert.include(reply.message, "WEBHOOK_ALLOW_PRIVATE_TARGETS=true")
          assert.include(reply.message, "docs/API.md \"Media\"")
        }))
    }
  )
})
