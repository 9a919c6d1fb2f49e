/**
 * `monthly_message_quota` on `POST /v1/messages`: a workspace whose quota is a number gets exactly
 * that many messages accepted on its (non-sandbox) channels this month, concurrent sends across
 * its channels included; the rest are 409 `ENTITLEMENT_LIMIT_REACHED`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { request, signUp } from "./support/Fixtures.js"
import { appWith, as, createQrChannel, pairOverHttp, Wa, waitForStatus } from "./support/QrApp.js"
import * as TestApp from "./support/TestApp.js"

const RECIPIENTS = 5
const recipient = (i: number) => `+49151${String(20_000_000 + (i % RECIPIENTS)).padStart(8, "0")}`

const override = (workspaceId: string, entitlement: string, value: number | null | undefined) =>
  Effect.flatMap(Operator.Operator, (o) => o.override(workspaceId, entitlement, value)).pipe(
    Effect.provide(TestApp.operatorLayer),
    Effect.orDie
  )

describe("monthly message quota", () => {
  layer(appWith(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped("accepts exactly the quota of concurrent sends over two channels and refuses the rest with 409", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        for (let i = 0; i < RECIPIENTS; i++) wa.contact(recipient(i))
        const user = yield* signUp()
        yield* override(user.workspaceId, "production_channels", 2)
        const channels: Array<string> = []
        for (const name of ["One", "Two"]) {
          const id = yield* createQrChannel(user, name)
          yield* pairOverHttp(wa, user, id)
          yield* waitForStatus(user, id, "connected")
          channels.push(id)
        }
        yield* override(user.workspaceId, "monthly_message_quota", 7)
        const usage = yield* request("GET", "/v1/usage", as(user))
        assert.strictEqual(usage.body.metered.messages_sent.limit, 7)

        const replies = yield* Effect.forEach(
          Array.from({ length: 24 }, (_, i) => i),
          (i) =>
            request("POST", "/v1/messages", {
              ...as(user),
              body: { channel_id: channels[i % 2], to: recipient(i), text: { body: `hello ${i}` } }
            }),
          { concurrency: 12 }
        )
        assert.deepStrictEqual(replies.map((r) => r.status).filter((s) => s !== 201 && s !== 409), [])
        assert.strictEqual(replies.filter((r) => r.status === 201).length, 7)
        for (const refused of replies.filter((r) => r.status === 409)) {
          assert.strictEqual(refused.body.error.code, "ENTITLEMENT_LIMIT_REACHED")
          assert.strictEqual(refused.body.error.details.entitlement, "monthly_message_quota")
          assert.strictEqual(refused.body.error.details.limit, 7)
        }

        // raising the quota lets sends in again; unlimited (cleared override on an unlimited plan) too
        yield* override(user.workspaceId, "monthly_message_quota", 8)
        const one = (i: number) =>
          request("POST", "/v1/messages", {
            ...as(user),
            body: { channel_id: channels[0], to: recipient(i), text: { body: `more ${i}` } }
          })
        assert.strictEqual((yield* one(100)).status, 201)
        assert.strictEqual((yield* one(101)).status, 409)
        yield* override(user.workspaceId, "monthly_message_quota", undefined)
        assert.strictEqual((yield* one(102)).status, 201)
      }))
  })
})
