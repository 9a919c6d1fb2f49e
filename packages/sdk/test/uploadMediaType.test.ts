/**
 * `uploadMedia` with a `contentType` the API refuses as no media type (packages/sdk/README.md
 * "Send a picture"): a CR/LF, which no HTTP header can carry (Node's fetch refused it, and the SDK
 * reported `NETWORK_ERROR`), or a parameter that is not `name=value`. The SDK reads it as the
 * server does and rejects before a byte is sent, with the API's own 422: the same code, message
 * and `details.reason` the API answers for such a type at a door that can carry it (a sandbox
 * inbound file's `mime_type`), at `["content-type"]`, and `details.sent = false`.
 */
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { SwitchboardError, toSwitchboardError, uploadMedia } from "@switchboard/sdk"
import { Effect } from "effect"
import { api, sandboxSetup } from "../../../test/support/Fixtures.js"
import * as TestApp from "../../../test/support/TestApp.js"

const FROM = "+4915112345678"
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...new Array(2000).fill(7)])

const baseUrl = Effect.map(HttpServer.HttpServer, (server) => {
  const address = server.address
  if (address._tag !== "TcpAddress") throw new Error("expected a TCP server")
  return `http://127.0.0.1:${address.port}`
})

describe("uploadMedia (sdk): a content type the API refuses", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("rejects a CR/LF or an odd parameter before sending, with the API's media_type_invalid", () =>
      Effect.gen(function*() {
        const { key, session, user } = yield* sandboxSetup([FROM])
        const url = yield* baseUrl
        const client = yield* api(key)
        // what the API answers for such a type where a request can carry it
        const answered = toSwitchboardError(
          yield* Effect.flip(client.sandbox.inbound({
            path: { sessionId: session.id },
            payload: {
              from: FROM,
              document: { data_base64: Buffer.from(PNG).toString("base64"), mime_type: "image/png\r\n" }
            }
          }))
        )
        assert.strictEqual(answered.status, 422)
        assert.strictEqual(answered.details["reason"], "media_type_invalid")
        let requests = 0
        const counting: typeof fetch = (input, init) => {
          requests++
          return fetch(input, init)
        }
        for (
          const contentType of [
            "image/png\r\n",
            "image/png\r\nX-Injected: 1",
            "image/png; codecs=opus\nX-Injected: 1",
            "\r\n",
            "image/png\u0000",
            "image/png; Injected",
            "*/*"
          ]
        ) {
          const label = JSON.stringify(contentType)
          const refused = yield* Effect.promise(() =>
            uploadMedia({ baseUrl: url, apiKey: key, fetch: counting }, { file: PNG, contentType }).then(
              () => undefined,
              (e: unknown) => e
            )
          )
          assert.instanceOf(refused, SwitchboardError, label)
          const error = refused as SwitchboardError
          assert.strictEqual(error.code, answered.code, label)
          assert.strictEqual(error.status, 422, label)
          assert.strictEqual(error.message, answered.message, label)
          assert.deepStrictEqual(error.details, {
            reason: "media_type_invalid",
            issues: [{
              path: ["content-type"],
              message: (answered.details["issues"] as Array<{ message: string }>)[0]!.message
            }],
            sent: false
          }, label)
          assert.notInclude(JSON.stringify(error.details) + error.message, "Injected", label)
        }
        assert.strictEqual(requests, 0)
        // spaces and tabs around a type are not part of it, as at the API's doors
        const stored = yield* Effect.promise(() =>
          uploadMedia({ baseUrl: url, apiKey: key, fetch: counting }, { file: PNG, contentType: " image/png\t" })
        )
        assert.strictEqual(stored.mime_type, "image/png")
        assert.strictEqual(requests, 1)
        // nothing else was stored
        const sql = yield* SqlClient.SqlClient
        const media = yield* sql<{ id: string }>`SELECT id FROM media WHERE workspace_id = ${user.workspaceId}`
        assert.deepStrictEqual(media.map((m) => m.id), [stored.id])
      }))
  })
})
