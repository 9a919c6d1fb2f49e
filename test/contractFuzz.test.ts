/**
 * Property-based fuzzing from the contract: for every operation with a body, path or query
 * parameters, requests generated from the schemas the `HttpApi` is built from (valid, or broken
 * one way; see support/ContractFuzz.ts). Properties: never a 5xx; a request the schema refuses
 * is 422 `VALIDATION_ERROR` with `details.issues` and no echo of the submitted value; any other is
 * a 2xx or an error the operation documents; every response decodes against the schema declared
 * for its status; a repeat with the same `Idempotency-Key` answers a byte-identical body.
 * Seeded and bounded (FUZZ_SEED, FUZZ_RUNS change them); bench/fuzz.ts runs longer.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Scopes } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { caseArbitrary, harvest, judge, MARKER, operations, prepare } from "./support/ContractFuzz.js"
import type { Case, Operation, Pool, Prepared } from "./support/ContractFuzz.js"
import { createKey, request, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const SEED = Number(process.env["FUZZ_SEED"] ?? 20261124)
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 10)

/** Streams never end by themselves. */
const fuzzed = operations.filter((op) => (op.payload || op.pathParams || op.query) && !op.path.endsWith("/stream"))

interface Credentials {
  readonly key: string
  readonly session: string
  readonly workspace: string
  readonly own: ReadonlySet<string>
}
let credentials: Credentials | undefined
const pool: Pool = new Map()

const send = (op: Operation, req: Prepared) => {
  const creds = credentials!
  // raw: generated requests, bodies sent as text
  return request(req.method, req.url, {
    ...(op.auth === "key" ? { token: creds.key } : {}),
    ...(op.auth === "session" ? { token: creds.session, workspace: creds.workspace } : {}),
    ...(req.body === undefined ? {} : { rawBody: req.body }),
    ...(req.idempotencyKey === undefined ? {} : { headers: { "idempotency-key": req.idempotencyKey } })
  })
}

const check = (op: Operation, c: Case) =>
  Effect.gen(function*() {
    const req = prepare(op, c, pool)
    const reply = yield* send(op, req)
    assert.deepStrictEqual(judge(op, req, reply), [], `${req.label}: ${reply.status} ${reply.text.slice(0, 300)}`)
    if (reply.status < 300) harvest(pool, reply.body, credentials!.own)
    if (req.idempotencyKey !== undefined) {
      const again = yield* send(op, req)
      assert.strictEqual(again.status, reply.status, `${req.label}: repeat`)
      assert.strictEqual(again.text, reply.text, `${req.label}: repeat`)
    }
  })

describe("the contract under generated requests", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("signs up the user the cases run as", () =>
      Effect.gen(function*() {
        const { key, session, user } = yield* sandboxSetup()
        yield* Effect.flatMap(Operator.Operator, (o) => o.setPlan(user.workspaceId, "growth")).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const all = yield* createKey(user, { mode: "test", scopes: [...Scopes.SCOPES] })
        credentials = {
          key: all.secret,
          session: user.accessToken,
          workspace: user.workspaceId,
          own: new Set([all.id, user.userId, session.id])
        }
        // the reflection found the contract (guards against fuzzing nothing)
        assert.isAbove(fuzzed.length, 40)
        assert.isTrue(fuzzed.some((op) => op.idempotent))
        void key
      }))

    // what the generated cases found, pinned
    it.effect("refuses a non-number limit without quoting it", () =>
      Effect.gen(function*() {
        // raw: a limit that is not a number, the answer searched whole
        const reply = yield* request("GET", `/v1/channels?limit=${MARKER}`, { token: credentials!.key })
        assert.strictEqual(reply.status, 422)
        assert.deepStrictEqual(reply.body.error.details.issues[0].path, ["limit"])
        assert.notInclude(reply.text, MARKER)
      }))

    it.effect("answers a path member longer than the router takes with 422, not 405 for an allowed method", () =>
      Effect.gen(function*() {
        // raw: a path member longer than the router takes
        const reply = yield* request("GET", `/v1/channels/ch_${"A".repeat(120)}`, { token: credentials!.key })
        assert.strictEqual(reply.status, 422, reply.text)
        assert.strictEqual(reply.body.error.code, "VALIDATION_ERROR")
        assert.deepStrictEqual(reply.body.error.details.issues[0].path, ["channelId"])
        // raw: a method the route does not have (405)
        const other = yield* request("PUT", `/v1/channels/ch_${"A".repeat(120)}`, { token: credentials!.key })
        assert.strictEqual(other.status, 405)
      }))

    it.effect("refuses a cursor whose time the database could not compare with 422, not 500", () =>
      Effect.gen(function*() {
        for (const c of [",7\"", "2026-02-31T00:00:00.000Z", "Tuesday"]) {
          const after = Buffer.from(JSON.stringify({ c, i: "x" })).toString("base64url")
          // raw: cursors the typed client would never build
          const reply = yield* request("GET", `/v1/api-keys?after=${after}`, {
            token: credentials!.session,
            workspace: credentials!.workspace
          })
          assert.strictEqual(reply.status, 422, `${c}: ${reply.text}`)
          assert.deepStrictEqual(reply.body.error.details.issues[0].path, ["after"])
        }
      }))

    for (const op of fuzzed) {
      it.effect.prop(op.name, [caseArbitrary(op)], ([c]) => check(op, c), {
        timeout: 60_000,
        fastCheck: { seed: SEED, numRuns: RUNS, endOnFailure: true }
      })
    }
  })
})
