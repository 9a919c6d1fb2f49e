import { assert, describe, layer } from "@effect/vitest"
import { Plans } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { api, createKey, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

describe("plan and usage", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("reports every entitlement of each plan from the plan table", () =>
      Effect.gen(function*() {
        const operator = yield* Operator.Operator
        const user = yield* signUp()
        const key = yield* createKey(user, { scopes: ["workspace.read"] })
        const client = yield* api(key.secret)
        for (const plan of Plans.PLANS) {
          yield* operator.setPlan(user.workspaceId, plan)
          const body = yield* client.plan.plan()
          assert.strictEqual(body.plan, plan)
          assert.strictEqual(body.workspace_id, user.workspaceId)
          const entitlements: Readonly<Record<string, unknown>> = body.entitlements
          for (const [name, definition] of Object.entries(Plans.ENTITLEMENTS)) {
            const e = entitlements[name]
            assert.deepStrictEqual(e, {
              value: definition.values[plan],
              unlimited: definition.values[plan] === null,
              source: "plan",
              enforced: definition.enforced
            }, `${plan}.${name}`)
          }
        }
        const growth = yield* Effect.flatMap(operator.setPlan(user.workspaceId, "growth"), () => client.plan.plan())
        assert.strictEqual(growth.entitlements.production_channels.value, 10)
        assert.strictEqual(growth.entitlements.support_tier.value, "priority")
      }).pipe(Effect.provide(TestApp.operatorLayer)))

    it.effect("shows an override with source override, and clears it", () =>
      Effect.gen(function*() {
        const operator = yield* Operator.Operator
        const user = yield* signUp()
        const key = yield* createKey(user, { scopes: ["workspace.read"] })
        yield* operator.override(user.workspaceId, "contacts", 42)
        yield* operator.override(user.workspaceId, "webhook_endpoints", null)
        const client = yield* api(key.secret)
        const { entitlements } = yield* client.plan.plan()
        assert.deepStrictEqual(entitlements.contacts, {
          value: 42,
          unlimited: false,
          source: "override",
          enforced: true
        })
        assert.deepStrictEqual(entitlements.webhook_endpoints, {
          value: null,
          unlimited: true,
          source: "override",
          enforced: true
        })
        assert.strictEqual(entitlements.production_channels.source, "plan")
        yield* operator.override(user.workspaceId, "contacts", undefined)
        const cleared = yield* client.plan.plan()
        assert.deepStrictEqual(cleared.entitlements.contacts, {
          value: 500,
          unlimited: false,
          source: "plan",
          enforced: true
        })
      }).pipe(Effect.provide(TestApp.operatorLayer)))

    it.effect("reports usage for the current UTC month with live gauges", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { scopes: ["workspace.read"] })
        yield* createKey(user)
        const usage = yield* (yield* api(key.secret)).plan.usage()
        const now = new Date()
        assert.strictEqual(
          usage.period.start,
          new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString()
        )
        assert.strictEqual(
          usage.period.end,
          new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString()
        )
        assert.deepStrictEqual(usage.current.api_keys, { used: 2, limit: 2, unlimited: false, remaining: 0 })
        assert.deepStrictEqual(usage.current.seats, { used: 1, limit: 1, unlimited: false, remaining: 0 })
        assert.deepStrictEqual(usage.metered.messages_sent, {
          used: 0,
          limit: null,
          unlimited: true,
          remaining: null
        })
        // raw: a query parameter the contract does not declare (refused like an unknown body member)
        const withParams = yield* request("GET", "/v1/usage?month=2026-01", { token: key.secret })
        assert.strictEqual(withParams.status, 422)
        assert.deepStrictEqual(withParams.body.error.details.issues[0].path, ["query", 0])
      }))
  })
})
