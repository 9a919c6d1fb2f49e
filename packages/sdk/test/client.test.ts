import { FetchHttpClient, HttpServer } from "@effect/platform"
import { assert, describe, it, layer } from "@effect/vitest"
import { Errors } from "@switchboard/domain"
import { createClient, SwitchboardClient, SwitchboardError } from "@switchboard/sdk"
import { Effect } from "effect"
import { request, sandboxSetup } from "../../../test/support/Fixtures.js"
import * as TestApp from "../../../test/support/TestApp.js"

const TO = "+4915112345678"

/** The in-process server's URL, as a user would configure it. */
const baseUrl = Effect.map(HttpServer.HttpServer, (server) => {
  const address = server.address
  if (address._tag !== "TcpAddress") throw new Error("expected a TCP server")
  return `http://127.0.0.1:${address.port}`
})

describe("@switchboard/sdk requests", () => {
  it.effect("makes a group's methods at its first use, not the whole contract at once; every group is there", () =>
    Effect.gen(function*() {
      const client = yield* SwitchboardClient.make({ baseUrl: "http://127.0.0.1:9", apiKey: "wa_test_x" }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      assert.deepStrictEqual(Object.keys(client), [...SwitchboardClient.groupNames])
      assert.include(SwitchboardClient.groupNames, "messages")
      // not made yet: an accessor that makes the group the first time
      const unmade = Object.getOwnPropertyDescriptor(client, "channels")
      assert.isFunction(unmade?.get)
      assert.notProperty(unmade, "value")
      const messages = client.messages
      assert.isFunction(messages.send)
      assert.strictEqual(client.messages, messages, "made once")
      const promised = createClient({ baseUrl: "http://127.0.0.1:9", apiKey: "wa_test_x" })
      assert.isFunction(promised.templates.list, "the Promise client names every endpoint before any call")
    }))

  it("sends a payload the contract takes as null (qr/start without a body) instead of calling it missing", async () => {
    const sent: Array<{ readonly url: string; readonly body: unknown }> = []
    const switchboard = createClient({
      baseUrl: "http://127.0.0.1:9",
      apiKey: "wa_test_x",
      fetch: async (input, init) => {
        sent.push({ url: String(input), body: init?.body })
        return new Response(
          JSON.stringify({ error: { code: "SERVICE_UNAVAILABLE", message: "No runner answered", details: {} } }),
          { status: 503, headers: { "content-type": "application/json" } }
        )
      }
    })
    const refused = await switchboard.qrPairing.start({
      path: { channelId: "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" },
      payload: null
    }).then(() => undefined, (e: unknown) => e)
    assert.strictEqual(sent.length, 1, "sent, not refused as a missing member")
    assert.match(sent[0]!.url, /\/v1\/channels\/ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z\/qr\/start$/)
    assert.strictEqual((refused as SwitchboardError).code, "SERVICE_UNAVAILABLE")
    const missing = await switchboard.qrPairing.start(
      { path: { channelId: "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" } } as unknown as Parameters<
        typeof switchboard.qrPairing.start
      >[0]
    ).then(() => undefined, (e: unknown) => e)
    assert.strictEqual((missing as SwitchboardError).code, "VALIDATION_ERROR")
    assert.strictEqual(sent.length, 1, "a payload left out is still refused before sending")
  })

  it("refuses an Idempotency-Key a header cannot carry as written before sending, never a network error", async () => {
    let calls = 0
    const switchboard = createClient({
      baseUrl: "http://127.0.0.1:9",
      apiKey: "wa_test_x",
      fetch: async () => {
        calls++
        return new Response(
          JSON.stringify({ error: { code: "SERVICE_UNAVAILABLE", message: "No runner answered", details: {} } }),
          { status: 503, headers: { "content-type": "application/json" } }
        )
      }
    })
    const send = (key: string) =>
      switchboard.messages.send({
        payload: { to: "+4915112345678", text: { body: "x" } },
        headers: { "idempotency-key": key }
      }).then(() => undefined, (e: unknown) => e as SwitchboardError)
    // a line break (fetch refused it: NETWORK_ERROR), a character above U+00FF (the same), spaces
    // at either end (dropped on the way: another key arrived)
    for (
      const key of ["order-1\r\nX-Injected: 1", "order-1\n", "\u20ac-order-1", " order-1", "order-1\t", "a\u0000b"]
    ) {
      const refused = await send(key)
      assert.strictEqual(refused?.code, "VALIDATION_ERROR", JSON.stringify(key))
      assert.strictEqual(refused?.status, 422)
      assert.strictEqual(refused?.details["sent"], false)
      assert.match(refused!.message, /^Request validation failed: idempotency-key: Expected characters an HTTP header/)
      assert.notInclude(JSON.stringify(refused?.details), "order-1", "never the submitted value")
    }
    assert.strictEqual(calls, 0, "nothing was sent")
    // what a header carries: visible ASCII, Latin-1, inner spaces and tabs
    for (const key of ["order-1", "caf\u00e9 order\t1", "x".repeat(255)]) {
      assert.strictEqual((await send(key))?.code, "SERVICE_UNAVAILABLE", JSON.stringify(key))
    }
    assert.strictEqual(calls, 3)
  })
})

describe("@switchboard/sdk against the server", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("sends through the Promise client and rejects with a typed SwitchboardError", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([TO])
        const switchboard = createClient({ baseUrl: yield* baseUrl, apiKey: key })
        const sent = yield* Effect.promise(() =>
          switchboard.messages.send({ payload: { to: TO, text: { body: "hello from the sdk" } }, headers: {} })
        )
        assert.match(sent.id, /^msg_/)
        assert.strictEqual(sent.status, "queued")
        assert.strictEqual(sent.channel_id, session.channel_id)
        const fetched = yield* Effect.promise(() => switchboard.messages.get({ path: { messageId: sent.id } }))
        assert.strictEqual(fetched.text?.body, "hello from the sdk")

        const refused = yield* Effect.promise(() =>
          switchboard.messages.send({ payload: { to: "+4915199999999", text: { body: "x" } }, headers: {} }).then(
            () => undefined,
            (error: unknown) => error
          )
        )
        assert.instanceOf(refused, SwitchboardError)
        const error = refused as SwitchboardError
        assert.strictEqual(error.code, "VALIDATION_ERROR")
        assert.strictEqual(error.status, 422)
        assert.strictEqual(error.details["reason"], "recipient_not_verified")

        const unauthenticated = createClient({ baseUrl: yield* baseUrl, apiKey: "wa_test_nope" })
        const denied = yield* Effect.promise(() =>
          unauthenticated.messages.list({ urlParams: {} }).then(() => undefined, (e: unknown) => e)
        )
        assert.strictEqual((denied as SwitchboardError).code, "UNAUTHORIZED")
        assert.strictEqual((denied as SwitchboardError).status, 401)
      }))

    it.effect("refuses a request that breaks the contract before sending it, in the server's shape", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        let calls = 0
        const switchboard = createClient({
          baseUrl: yield* baseUrl,
          apiKey: key,
          fetch: (input, init) => {
            calls++
            return fetch(input, init)
          }
        })
        const bad = { to: TO, text: { body: "" } }
        const refused = yield* Effect.promise(() =>
          switchboard.messages.send({ payload: bad, headers: {} }).then(() => undefined, (e: unknown) => e)
        )
        assert.strictEqual(calls, 0, "nothing was sent")
        assert.instanceOf(refused, SwitchboardError)
        const error = refused as SwitchboardError
        // the server refuses the same body with the same status, code and issues
        const server = yield* request("POST", "/v1/messages", { token: key, body: bad })
        assert.strictEqual(error.status, 422)
        assert.strictEqual(server.status, 422)
        assert.strictEqual(error.code, server.body.error.code)
        assert.deepStrictEqual(error.details["issues"], server.body.error.details.issues)
        assert.strictEqual(error.details["sent"], false)
        assert.strictEqual(
          error.message,
          `Request validation failed: text.body: ${server.body.error.details.issues[0].message}`
        )
        assert.notInclude(error.message, "\n")

        const badId = yield* Effect.promise(() =>
          switchboard.messages.get({ path: { messageId: "msg_nope" as `msg_${string}` } }).then(
            () => undefined,
            (e: unknown) => e as SwitchboardError
          )
        )
        assert.strictEqual(
          badId?.message,
          // refused before sending: the server would answer the message's 404 (docs/API.md "Errors")
          "Request validation failed: messageId: Names nothing: expected an id of the form msg_ followed by 26 ULID characters"
        )
        assert.notInclude(JSON.stringify(badId?.details), "nope", "never the submitted value")
      }))

    it.effect("sends through the Effect client and fails with the endpoint's typed error", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const client = yield* SwitchboardClient.make({ baseUrl: yield* baseUrl, apiKey: key }).pipe(
          Effect.provide(FetchHttpClient.layer)
        )
        const sent = yield* client.messages.send({
          payload: { to: TO, text: { body: "hello from Effect" }, category: "marketing" },
          headers: { "idempotency-key": "sdk-1" }
        })
        assert.strictEqual(sent.category, "marketing")
        const [replayed, response] = yield* client.messages.send({
          payload: { to: TO, text: { body: "hello from Effect" }, category: "marketing" },
          headers: { "idempotency-key": "sdk-1" },
          withResponse: true
        })
        assert.strictEqual(replayed.id, sent.id)
        assert.strictEqual(response.headers["idempotent-replay"], "true")

        const error = yield* client.messages.send({
          payload: { to: TO, text: { body: "x" }, channel_id: "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" },
          headers: {}
        }).pipe(Effect.flip)
        assert.instanceOf(error, Errors.ChannelNotFound)
        assert.strictEqual(error._tag, "ChannelNotFound")
        if (error._tag === "ChannelNotFound") {
          assert.deepStrictEqual(error.details, { resource: "channel", id: "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" })
        }
      }))
  })
})
