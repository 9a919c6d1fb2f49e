/**
 * `monthly_message_quota` on `POST /v1/messages`: a workspace whose quota is a number gets exactly
 * that many messages accepted on its (non-sandbox) channels this month, concurrent sends across
 * its channels included; the rest are 409 `ENTITLEMENT_LIMIT_REACHED`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { Effect, Either } from "effect"
import { api, refused, signUp } from "./support/Fixtures.js"
import { appWith, createQrChannel, pairOverHttp, Wa, waitForStatus } from "./support/QrApp.js"
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
        const channels: Array<`ch_${string}`> = []
        for (const name of ["One", "Two"]) {
          const id = yield* createQrChannel(user, name)
          yield* pairOverHttp(wa, user, id)
          yield* waitForStatus(user, id, "connected")
          channels.push(id)
        }
        yield* override(user.workspaceId, "monthly_message_quota", 7)
        const client = yield* api(user.accessToken, user.workspaceId)
        const usage = yield* client.plan.usage()
        assert.strictEqual(usage.metered.messages_sent.limit, 7)

        const send = (channelId: `ch_${string}`, to: string, body: string) =>
          client.messages.send({ payload: { channel_id: channelId, to, text: { body } }, headers: {} })
        const replies = yield* Effect.forEach(
          Array.from({ length: 24 }, (_, i) => i),
          (i) => Effect.either(send(channels[i % 2]!, recipient(i), `hello ${i}`)),
          { concurrency: 12 }
        )
        const refusals = yield* Effect.forEach(replies.filter(Either.isLeft), (r) => refused(Effect.fail(r.left)))
        assert.deepStrictEqual(refusals.map((r) => r.status).filter((s) => s !== 409), [])
        assert.strictEqual(replies.filter(Either.isRight).length, 7)
        assert.strictEqual(refusals.length, 17)
        for (const refusal of refusals) {
          assert.strictEqual(refusal.code, "ENTITLEMENT_LIMIT_REACHED")
          assert.strictEqual(refusal.details["entitlement"], "monthly_message_quota")
          assert.strictEqual(refusal.details["limit"], 7)
        }

        // raising the quota lets sends in again; unlimited (cleared override on an unlimited plan) too
        yield* override(user.workspaceId, "monthly_message_quota", 8)
        const one = (i: number) => send(channels[0]!, recipient(i), `more ${i}`)
        assert.strictEqual((yield* one(100)).status, "queued")
        assert.strictEqual((yield* refused(one(101))).status, 409)
        yield* override(user.workspaceId, "monthly_message_quota", undefined)
        assert.strictEqual((yield* one(102)).status, "queued")
      }))
  })
})
