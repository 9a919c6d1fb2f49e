/**
 * Who may revoke which API key: a signed-in user any key of the workspace; an API key only keys
 * of its own mode whose scopes it holds all of (itself included).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, createKey, refused, signUp } from "./support/Fixtures.js"
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
        const revoke = (token: string, id: `key_${string}`) =>
          Effect.flatMap(api(token), (client) => client.apiKeys.revoke({ path: { keyId: id } }))

        const narrowTest = yield* make("test", ["workspace.read"])
        const broadTest = yield* make("test", ["workspace.read", "messages.send"])
        const liveAll = yield* make("live", ALL)
        const liveRead = yield* make("live", ["workspace.read"])

        // the reported case: a test key with workspace.read against a live key with every scope
        const upward = yield* refused(revoke(narrowTest.secret, liveAll.id))
        assert.strictEqual(upward.status, 403)
        assert.strictEqual(upward.code, "FORBIDDEN")
        assert.strictEqual(upward.details["reason"], "key_mode_mismatch")

        const wider = yield* refused(revoke(narrowTest.secret, broadTest.id))
        assert.strictEqual(wider.status, 403)
        assert.strictEqual(wider.details["reason"], "key_scopes_exceed_own")
        assert.deepStrictEqual(wider.details["missing_scopes"], ["messages.send"])

        const otherMode = yield* refused(revoke(narrowTest.secret, liveRead.id))
        assert.strictEqual(otherMode.status, 403)
        assert.strictEqual(otherMode.details["reason"], "key_mode_mismatch")
        const liveToTest = yield* refused(revoke(liveAll.secret, narrowTest.id))
        assert.strictEqual(liveToTest.status, 403)

        // refused revocations changed nothing
        const keys = yield* (yield* api(liveAll.secret)).apiKeys.list({ urlParams: {} })
        assert.strictEqual(keys.data.length, 4)
        assert.isTrue(keys.data.every((k) => k.revoked_at === null))

        const missing = yield* refused(revoke(narrowTest.secret, "key_01HZZZZZZZZZZZZZZZZZZZZZZZ"))
        assert.strictEqual(missing.status, 404)

        // a key whose scopes include the target's, same mode: allowed
        const down = yield* revoke(broadTest.secret, narrowTest.id)
        assert.strictEqual(down.id, narrowTest.id)
        const liveDown = yield* revoke(liveAll.secret, liveRead.id)
        assert.strictEqual(liveDown.id, liveRead.id)

        // a key may revoke itself
        const self = yield* revoke(broadTest.secret, broadTest.id)
        assert.strictEqual(self.id, broadTest.id)

        // a user session revokes anything
        const bySession = yield* (yield* api(user.accessToken, user.workspaceId)).apiKeys.revoke({
          path: { keyId: liveAll.id }
        })
        assert.strictEqual(bySession.id, liveAll.id)
      }))
  })
})
