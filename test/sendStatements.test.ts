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

// group commit is off by default (docs/CONFIGURATION.md `SEND_GROUP_COMMIT`); this file measures it on, whatever the env says
process.env["SEND_GROUP_COMMIT"] = "true"
// one shared statement in flight: the sends that reach their writes while it runs must share the
// next one. With several in flight, 12 concurrent sends can each find a slot free when they come a
// few ms apart (CI, 2026-11-27: 12 statements); the leader's own tests cover several in flight.
process.env["SEND_GROUP_COMMIT_STATEMENTS"] = "1"

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

    it.effect("writes concurrent sends in fewer statements than sends, each answered with its own message", () =>
      Effect.gen(function*() {
        const numbers = Array.from({ length: 12 }, (_, i) => `+49151000002${String(i).padStart(2, "0")}`)
        const { key } = yield* sandboxSetup(numbers)
        const client = yield* api(key)
        recorded.length = 0
        const sent = yield* Effect.forEach(
          numbers,
          (to) =>
            client.messages.send({
              payload: { to, text: { body: `for ${to}` } },
              headers: { "idempotency-key": `group-${to}` }
            }),
          { concurrency: "unbounded" }
        )
        // the writes' statements: one send's (`WITH claim AS`) or several sends' (`WITH s0_claim AS`)
        const writes = recorded.filter((s) => /^WITH (s0_)?claim AS/.test(s))
        assert.isAtLeast(writes.length, 1)
        assert.isBelow(writes.length, numbers.length, firstWords(recorded).join("\n"))
        assert.deepStrictEqual(
          sent.map((m) => [m.to, m.text?.body, m.status]),
          numbers.map((to) => [to, `for ${to}`, "queued"])
        )
        assert.strictEqual(new Set(sent.map((m) => m.id)).size, numbers.length)
        assert.strictEqual(new Set(sent.map((m) => m.contact_id)).size, numbers.length)
        assert.strictEqual(new Set(sent.map((m) => m.conversation_id)).size, numbers.length)
        // each is stored as answered, and its key replays its own message
        for (const [i, to] of numbers.entries()) {
          const stored = yield* client.messages.get({ path: { messageId: sent[i]!.id } })
          assert.deepStrictEqual([stored.to, stored.contact_id, stored.conversation_id], [
            to,
            sent[i]!.contact_id,
            sent[i]!.conversation_id
          ])
          const [replayed, response] = yield* client.messages.send({
            payload: { to, text: { body: `for ${to}` } },
            headers: { "idempotency-key": `group-${to}` },
            withResponse: true
          })
          assert.strictEqual(response.headers["idempotent-replay"], "true")
          assert.deepStrictEqual([replayed.id, replayed.contact_id], [sent[i]!.id, sent[i]!.contact_id])
        }
        const contacts = yield* client.contacts.list({ urlParams: {} })
        assert.deepStrictEqual(contacts.data.map((c) => c.phone_number).sort(), [...numbers].sort())
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
