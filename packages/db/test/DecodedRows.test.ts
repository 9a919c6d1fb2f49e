/**
 * A row that does not match its schema is a failure at the repo's boundary (a `ParseError`, a
 * defect by `Rows.dieOnDatabaseError`), never a value of the wrong type passed on as if it were
 * right: each repo decodes its rows (docs/ARCHITECTURE.md "Rows decode to domain types").
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { Rows, SendChecksRepo, WorkspacesRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, Schemas } from "@switchboard/domain"
import { Cause, Effect, Either, Exit, Layer, Option, ParseResult } from "effect"

const TestLayer = Layer.mergeAll(
  WorkspacesRepo.WorkspacesRepo.Default,
  SendChecksRepo.SendChecksRepo.Default
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const now = () => Schemas.toTimestamp(Date.now())

/** A workspace stored as given (`plan` unchecked by the table), with one default channel. */
const workspace = (plan: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const workspaceId = yield* Ids.newId("ws")
    const channelId = yield* Ids.newId("ch")
    yield* sql`INSERT INTO workspaces (id, name, plan, created_at, updated_at)
      VALUES (${workspaceId}, 'w', ${plan}, ${now()}, ${now()})`
    yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, is_default, created_at, updated_at)
      VALUES (${channelId}, ${workspaceId}, 'c', 'sandbox', 'connected', true, ${now()}, ${now()})`
    return { workspaceId, channelId }
  })

/** The call's defect when it died of a row that did not decode (the column named in its message). */
const parseDefect = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(self), (exit) => {
    assert.isTrue(Exit.isFailure(exit), "a malformed row must not be answered")
    const defect = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined
    assert.isTrue(ParseResult.isParseError(defect), `a ParseError defect, got ${String(defect)}`)
    return String(defect)
  })

describe("decodeRows", () => {
  it("fails with a ParseError naming the column, for a row of the wrong shape", () => {
    const decode = Rows.decodeRows(Rows.IdRow("msg"))
    assert.deepStrictEqual(
      Effect.runSync(Effect.either(decode([{ id: "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" }]))),
      Either.right([{ id: "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" as const }])
    )
    const failed = Effect.runSync(Effect.flip(decode([{ id: "cnt_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" }])))
    assert.isTrue(ParseResult.isParseError(failed))
    assert.include(String(failed), "id")
  })
})

layer(TestLayer)("a malformed row is a failure, not a cast", (it) => {
  it.effect("an entitlement override that is not a number, flag, text or null", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* WorkspacesRepo.WorkspacesRepo
      const { workspaceId } = yield* workspace("free")
      yield* repo.setOverride(workspaceId, "production_channels", 5, now())
      assert.deepStrictEqual([...(yield* repo.overrides(workspaceId))], [["production_channels", 5]])
      yield* sql`UPDATE entitlement_overrides SET value = '{"limit": 5}'::jsonb WHERE workspace_id = ${workspaceId}`
      assert.include(yield* parseDefect(repo.overrides(workspaceId)), "value")
    }))

  it.effect("the send path's facts of a workspace on a plan that does not exist", () =>
    Effect.gen(function*() {
      const checks = yield* SendChecksRepo.SendChecksRepo
      const good = yield* workspace("starter")
      const facts = yield* checks.facts({
        workspaceId: good.workspaceId,
        channelId: undefined,
        to: "+4915112345678",
        now: now()
      })
      assert.strictEqual(Option.getOrThrow(facts).plan, "starter")
      const bad = yield* workspace("platinum")
      assert.include(
        yield* parseDefect(
          checks.facts({ workspaceId: bad.workspaceId, channelId: undefined, to: "+4915112345678", now: now() })
        ),
        "plan"
      )
    }))

  it.effect("the operator's list of workspaces", () =>
    Effect.gen(function*() {
      const repo = yield* WorkspacesRepo.WorkspacesRepo
      yield* workspace("platinum")
      assert.include(yield* parseDefect(repo.listAll(1000)), "plan")
    }))
})
