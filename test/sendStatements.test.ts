/**
 * What a send costs the database in statements (each one a round trip through the SQL client), and
 * the plan's contacts limit on a send to a new number (docs/API.md "Contacts"), which the send's one
 * write statement enforces.
 */
import { HttpServerRequest } from "@effect/platform"
import * as Statement from "@effect/sql/Statement"
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { Context, Effect, FiberRef, FiberRefs, Layer, Option } from "effect"
import { api, refused, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

/** The statements each `POST /v1/messages` ran (on its own fiber or those it forked), in order. */
const recorded: Array<string> = []
const recording = Statement.setTransformer((statement, _sql, refs) => {
  const request = Context.getOption(
    FiberRefs.getOrDefault(refs, FiberRef.currentContext),
    HttpServerRequest.HttpServerRequest
  )
  if (Option.isSome(request) && request.value.method === "POST" && request.value.url.startsWith("/v1/messages")) {
    recorded.push(statement.compile()[0].replace(/\s+/g, " ").trim())
  }
  return Effect.succeed(statement)
})

/**
 * The statements of one send. Left out: authentication's read (cached for seconds, docs/API.md "API key
 * cache") and the renewal of the key's claim, a timer that fires only in a request running longer
 * than a few seconds (a loaded machine).
 */
const statementsOf = <A, E, R>(send: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    recorded.length = 0
    const result = yield* send
    return {
      result,
      statements: recorded.filter((s) =>
        !/\bapi_keys\b/.test(s) && !/^UPDATE idempotency_keys SET lease_until\b/.test(s)
      )
    }
  })

const firstWords = (statements: ReadonlyArray<string>) => statements.map((s) => s.split(" ").slice(0, 3).join(" "))

describe("the send's statements", () => {
  layer(TestApp.layer().pipe(Layer.provide(recording)), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("sends in three statements with an Idempotency-Key (claim, checks, writes) and two without", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup(["+4915100000001", "+4915100000002"])
        const client = yield* api(key)
        const send = (to: string, idempotencyKey?: string) =>
          client.messages.send({
            payload: { to, text: { body: "hi" } },
            headers: idempotencyKey ? { "idempotency-key": idempotencyKey } : {}
          })
        // a new contact and conversation, then the same again, each with and without a key
        for (
          const [to, idempotencyKey] of [
            ["+4915100000001", "first"],
            ["+4915100000001", "again"],
            ["+4915100000002", undefined],
            ["+4915100000002", undefined]
          ] as const
        ) {
          const { result, statements } = yield* statementsOf(send(to, idempotencyKey))
          assert.strictEqual(result.status, "queued")
          assert.deepStrictEqual(
            firstWords(statements),
            [
              ...(idempotencyKey ? ["INSERT INTO idempotency_keys"] : []),
              "SELECT c.*, (c.provider",
              idempotencyKey ? "WITH claim AS" : "WITH go AS"
            ],
            statements.join("\n")
          )
        }
      }))

    it.effect("refuses a send to a new number beyond the plan's contacts, and still sends to known ones", () =>
      Effect.gen(function*() {
        const { key, user } = yield* sandboxSetup(["+4915100000011", "+4915100000012", "+4915100000013"])
        const client = yield* api(key)
        const send = (to: string) => client.messages.send({ payload: { to, text: { body: "hi" } }, headers: {} })
        yield* send("+4915100000011")
        yield* send("+4915100000012")
        yield* Effect.flatMap(Operator.Operator, (o) => o.override(user.workspaceId, "contacts", 2)).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const over = yield* refused(send("+4915100000013"))
        assert.strictEqual(over.status, 409)
        assert.strictEqual(over.code, "ENTITLEMENT_LIMIT_REACHED")
        assert.deepStrictEqual(over.details, { entitlement: "contacts", limit: 2, used: 2 })
        const known = yield* send("+4915100000011")
        assert.strictEqual(known.status, "queued")
        const contacts = yield* client.contacts.list({ urlParams: {} })
        assert.deepStrictEqual(contacts.data.map((c) => c.phone_number).sort(), ["+4915100000011", "+4915100000012"])
      }))
  })
})
