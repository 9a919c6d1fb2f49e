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
import { SCOPES } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect, Either, Schema } from "effect"
import {
  caseArbitrary,
  encodeComponent,
  idsIn,
  MARKER,
  mutate,
  operations,
  refuses,
  toParam,
  wireBody,
  wireParams
} from "./support/ContractFuzz.js"
import type { Case, Operation } from "./support/ContractFuzz.js"
import { createKey, request, sandboxSetup } from "./support/Fixtures.js"
import type { Reply } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const SEED = Number(process.env["FUZZ_SEED"] ?? 20261124)
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 10)

/** Streams never end by themselves; sign-out would end the session the other cases use. */
const fuzzed = operations.filter((op) => (op.payload || op.pathParams || op.query) && !op.path.endsWith("/stream"))

interface Credentials {
  readonly key: string
  readonly session: string
  readonly workspace: string
  /** never aimed at: revoking them would end the run */
  readonly own: ReadonlySet<string>
}
let credentials: Credentials | undefined
/** ids seen in answers, by prefix */
const pool = new Map<string, Array<string>>()

const aimed = (params: Record<string, string>, pick: ReadonlyArray<number>) =>
  Object.fromEntries(
    Object.entries(params).map(([k, v], i) => {
      const known = pool.get(v.split("_")[0]!) ?? []
      const n = pick[i % pick.length]!
      return [k, known.length > 0 && n % 4 !== 0 ? known[n % known.length]! : v]
    })
  )

const urlOf = (
  op: Operation,
  params: Record<string, unknown> | undefined,
  query: Record<string, unknown> | undefined
) => {
  let path = op.path
  for (const [k, v] of Object.entries(params ?? {})) path = path.replace(`:${k}`, encodeComponent(toParam(v)))
  const pairs = Object.entries(wireParams(query ?? {})).flatMap(([k, v]) =>
    (Array.isArray(v) ? v : [v]).map((x) => `${k}=${encodeComponent(x)}`)
  )
  return pairs.length > 0 ? `${path}?${pairs.join("&")}` : path
}

const decodes = (schema: Schema.Schema<any, any> | undefined, reply: Reply) =>
  schema === undefined ? reply.text === "" : Either.isRight(Schema.decodeUnknownEither(schema)(reply.body))

const send = (op: Operation, c: Case, url: string, body: unknown) => {
  const creds = credentials!
  return request(op.method, url, {
    ...(op.auth === "key" ? { token: creds.key } : {}),
    ...(op.auth === "session" ? { token: creds.session, workspace: creds.workspace } : {}),
    ...(body === undefined ? {} : { rawBody: JSON.stringify(body) }),
    ...(op.idempotent ? { headers: { "idempotency-key": c.idempotencyKey } } : {})
  })
}

const check = (op: Operation, c: Case) =>
  Effect.gen(function*() {
    const m = c.mutation
    const params = c.pathParams && aimed(c.pathParams, c.pick)
    const body = m?.target === "body" ? mutate(c.body, m) : c.body
    // a path member cannot be left out: its segment is then the route's own `:name`
    const pathParams = m?.target === "path" ? mutate(params, m) as Record<string, unknown> : params
    const query = m?.target === "query" ? mutate(c.query, m) as Record<string, unknown> : c.query
    const broken = (op.payload !== undefined && refuses(op.payload, wireBody(body))) ||
      (op.pathParams !== undefined && refuses(op.pathParams, wireParams(pathParams ?? {}))) ||
      (op.query !== undefined && refuses(op.query, wireParams(query ?? {})))
    const label = `${op.name} ${m ? `${m.kind} in ${m.target} (at ${m.at}, variant ${m.variant})` : "valid"}`
    const reply = yield* send(op, c, urlOf(op, pathParams, query), body)
    assert.isBelow(reply.status, 500, `${label}: ${reply.text.slice(0, 300)}`)
    if (broken) {
      assert.strictEqual(reply.status, 422, `${label}: ${reply.text.slice(0, 300)}`)
      assert.strictEqual(reply.body?.error?.code, "VALIDATION_ERROR", label)
      assert.isAbove(reply.body.error.details.issues.length, 0, label)
      assert.notInclude(reply.text, MARKER, label)
    }
    const declared = reply.status < 300 ? op.successes : op.errors
    assert.isTrue(declared.has(reply.status), `${label}: undocumented ${reply.status} ${reply.text.slice(0, 300)}`)
    assert.isTrue(decodes(declared.get(reply.status), reply), `${label}: ${reply.text.slice(0, 300)}`)
    if (reply.status < 300) {
      for (const id of idsIn(reply.body)) {
        if (credentials!.own.has(id)) continue
        const known = pool.get(id.split("_")[0]!) ?? []
        if (!known.includes(id)) pool.set(id.split("_")[0]!, [...known, id].slice(-8))
      }
    }
    if (op.idempotent) {
      const again = yield* send(op, c, urlOf(op, pathParams, query), body)
      assert.strictEqual(again.status, reply.status, `${label}: repeat`)
      assert.strictEqual(again.text, reply.text, `${label}: repeat`)
    }
  })

describe("the contract under generated requests", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("signs up the user the cases run as", () =>
      Effect.gen(function*() {
        const { key, session, user } = yield* sandboxSetup()
        yield* Effect.flatMap(Operator, (o) => o.setPlan(user.workspaceId, "growth")).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const all = yield* createKey(user, { mode: "test", scopes: [...SCOPES] })
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
        const reply = yield* request("GET", `/v1/channels?limit=${MARKER}`, { token: credentials!.key })
        assert.strictEqual(reply.status, 422)
        assert.deepStrictEqual(reply.body.error.details.issues[0].path, ["limit"])
        assert.notInclude(reply.text, MARKER)
      }))

    it.effect("answers a path member longer than the router takes with 422, not 405 for an allowed method", () =>
      Effect.gen(function*() {
        const reply = yield* request("GET", `/v1/channels/ch_${"A".repeat(120)}`, { token: credentials!.key })
        assert.strictEqual(reply.status, 422, reply.text)
        assert.strictEqual(reply.body.error.code, "VALIDATION_ERROR")
        assert.deepStrictEqual(reply.body.error.details.issues[0].path, ["channelId"])
        const other = yield* request("PUT", `/v1/channels/ch_${"A".repeat(120)}`, { token: credentials!.key })
        assert.strictEqual(other.status, 405)
      }))

    it.effect("refuses a cursor whose time the database could not compare with 422, not 500", () =>
      Effect.gen(function*() {
        for (const c of [",7\"", "2026-02-31T00:00:00.000Z", "Tuesday"]) {
          const after = Buffer.from(JSON.stringify({ c, i: "x" })).toString("base64url")
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
