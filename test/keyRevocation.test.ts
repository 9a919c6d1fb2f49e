/**
 * Who may revoke which API key: a signed-in user any key of the workspace; an API key only keys
 * of its own mode whose scopes it holds all of (itself included).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { bodyOf, createKey, envelopeOf, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const ALL = [
  "workspace.read",
  "messages.send",
  "messages.read",
  "channels.read",
  "channels.manage",
  "webhooks.manage"
]

describe("API key revocation", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refuses a narrow key revoking a broader or other-mode key, and allows the rest", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const make = (mode: "test" | "live", scopes: ReadonlyArray<string>) =>
          createKey(user, { mode, scopes }).pipe(Effect.map((k) => ({ id: k.id, secret: k.secret })))
        const revoke = (token: string, id: string) => request("DELETE", `/v1/api-keys/${id}`, { token })

        const narrowTest = yield* make("test", ["workspace.read"])
        const broadTest = yield* make("test", ["workspace.read", "messages.send"])
        const liveAll = yield* make("live", ALL)
        const liveRead = yield* make("live", ["workspace.read"])

        // the reported case: a test key with workspace.read against a live key with every scope
        const upward = yield* revoke(narrowTest.secret, liveAll.id)
        assert.strictEqual(upward.status, 403)
        assert.strictEqual(envelopeOf(upward).code, "FORBIDDEN")
        assert.strictEqual(envelopeOf(upward).details.reason, "key_mode_mismatch")

        const wider = yield* revoke(narrowTest.secret, broadTest.id)
        assert.strictEqual(wider.status, 403)
        assert.strictEqual(envelopeOf(wider).details.reason, "key_scopes_exceed_own")
        assert.deepStrictEqual(envelopeOf(wider).details.missing_scopes, ["messages.send"])

        const otherMode = yield* revoke(narrowTest.secret, liveRead.id)
        assert.strictEqual(otherMode.status, 403)
        assert.strictEqual(envelopeOf(otherMode).details.reason, "key_mode_mismatch")
        const liveToTest = yield* revoke(liveAll.secret, narrowTest.id)
        assert.strictEqual(liveToTest.status, 403)

        // refused revocations changed nothing
        const list = yield* request("GET", "/v1/api-keys", { token: liveAll.secret })
        const keys = bodyOf(
          Schema.Struct({ data: Schema.Array(Schema.Struct({ revoked_at: Schema.NullOr(Schema.String) })) }),
          list
        )
        assert.isTrue(keys.data.every((k) => k.revoked_at === null))

        const missing = yield* revoke(narrowTest.secret, "key_01HZZZZZZZZZZZZZZZZZZZZZZZ")
        assert.strictEqual(missing.status, 404)

        // a key whose scopes include the target's, same mode: allowed
        const down = yield* revoke(broadTest.secret, narrowTest.id)
        assert.strictEqual(down.status, 200)
        const liveDown = yield* revoke(liveAll.secret, liveRead.id)
        assert.strictEqual(liveDown.status, 200)

        // a key may revoke itself
        const self = yield* revoke(broadTest.secret, broadTest.id)
        assert.strictEqual(self.status, 200)

        // a user session revokes anything
        const bySession = yield* request("DELETE", `/v1/api-keys/${liveAll.id}`, {
          token: user.accessToken,
          workspace: user.workspaceId
        })
        assert.strictEqual(bySession.status, 200)
      }))
  })
})
