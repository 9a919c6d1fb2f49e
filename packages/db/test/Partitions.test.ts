/**
 * The history tables in monthly partitions by id (docs/OPERATING.md "Partitions and retention"):
 * an existing installation's rows migrate into the first partition; every hot and list statement
 * of the webhook deliveries reads only the partitions its window needs (EXPLAIN ANALYZE of the
 * statements the repo runs); retention drops whole partitions and reads stay right.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Migrations, Partitions, PartitionsRepo, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, Schemas } from "@switchboard/domain"
import { Effect, Layer, Option, TestClock } from "effect"
import { randomBytes } from "node:crypto"
import pg from "pg"
import * as PlanReads from "./PlanReads.js"
import { UnmigratedLayer } from "./Unmigrated.js"

const DAY = 24 * 3600 * 1000

/** Events and messages kept for good (no EVENT_RETENTION_DAYS, MESSAGE_RETENTION_DAYS). */
const KEEP = { eventDays: Option.none(), messageDays: Option.none() }
const eventsKept = (days: number) => ({ eventDays: Option.some(days), messageDays: Option.none() })

const TestLayer = Layer.mergeAll(
  WebhookEndpointsRepo.WebhookEndpointsRepo.Default,
  WebhookDeliveriesRepo.WebhookDeliveriesRepo.Default,
  PartitionsRepo.PartitionsRepo.Default
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const now = Effect.map(TestClock.currentTimeMillis, Schemas.toTimestamp)

const workspace = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = yield* Ids.newId("ws")
  yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${id}, 'w', ${yield* now}, ${yield* now})`
  return id
})

const endpoint = (workspaceId: string) =>
  Effect.gen(function*() {
    const id = yield* Ids.newId("wh")
    yield* (yield* WebhookEndpointsRepo.WebhookEndpointsRepo).insert({
      id,
      workspaceId,
      url: "https://hooks.example.com/in",
      eventTypes: ["*"],
      description: "",
      secretSealed: "v1:unused",
      secretLast4: "abcd",
      now: yield* now
    })
    return id
  })

/**
 * An event made at `at` (epoch ms) with its pending delivery to `endpointId`, written with ids of
 * that time (not `Ids.newId`: its ids never go back in time, so a test clock set ahead would move
 * the ids of every later test in this worker ahead too).
 */
const event = (workspaceId: string, endpointId: string, at: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const random = () => randomBytes(16).toString("hex").toUpperCase().replace(/[ILOU]/g, "0").slice(0, 16)
    const eventId = `${Ids.idFloor("evt", at)}${random()}`
    const deliveryId = `${Ids.idFloor("whd", at)}${random()}`
    const time = Schemas.toTimestamp(at)
    yield* sql`INSERT INTO events (id, workspace_id, type, object_id, envelope, created_at)
      VALUES (${eventId}, ${workspaceId}, 'message.queued', 'msg_00000000000000000000000001', '{}', ${time})`
    yield* sql`INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status,
      next_attempt_at, created_at, updated_at)
      VALUES (${deliveryId}, ${endpointId}, ${workspaceId}, ${eventId}, 'message.queued', 'pending', ${time}, ${time},
        ${time})`
    return { eventId, deliveryId }
  })

const HISTORY = /^(webhook_deliveries|webhook_attempts|events)_/

/** The history partitions each statement of `effect` read (`PlanReads.partitionsRead`). */
const partitionsRead = <A, E, R>(effect: Effect.Effect<A, E, R>) => PlanReads.partitionsRead(effect, HISTORY)

/** The partitions of the deliveries (and attempts) whose bounds overlap ids made in `[from, to)`. */
const overlapping = (partitions: ReadonlyArray<Partitions.Partition>, prefix: Ids.IdPrefix, from: number, to: number) =>
  partitions.filter((p) => (p.from === null || p.from < Ids.idFloor(prefix, to)) && p.to > Ids.idFloor(prefix, from))
    .map((p) => p.name)

describe("Partitions", () => {
  layer(TestLayer, { timeout: 120_000 })((it) => {
    it.effect("ids sort by their time; idFloor is the least id of its instant", () =>
      Effect.sync(() => {
        const t = Date.UTC(2027, 0, 15, 12, 30)
        assert.strictEqual(Ids.idTime(Ids.idFloor("whd", t)), t)
        assert.strictEqual(Ids.idFloor("whd", -5), "whd_0000000000")
        assert.isTrue(Ids.idFloor("whd", t) < Ids.idFloor("whd", t + 1))
        assert.isTrue(`${Ids.idFloor("whd", t)}0000000000000000` >= Ids.idFloor("whd", t))
        assert.strictEqual(Partitions.partitionName("events", Partitions.monthStart(t)), "events_p202701")
        assert.strictEqual(Partitions.addMonths(Date.UTC(2027, 10, 1), 2), Date.UTC(2028, 0, 1))
      }))

    it.effect("every statement of the deliveries reads only the partitions of its window", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
        const first = (yield* Partitions.partitions("webhook_deliveries"))[0]!
        // the test clock 45 days into the second month after the first partition: a month
        // behind, one ahead of the window, and (made below) months ahead
        const month = Partitions.addMonths(Ids.idTime(first.to)!, 1)
        const t = month + 45 * DAY
        yield* TestClock.setTime(t)
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(t + 60 * DAY)
        const all = yield* Partitions.partitions("webhook_deliveries")
        const window = overlapping(all, "whd", t - 30 * DAY, t + Partitions.CLOCK_SLACK_MS)
        const current = overlapping(all, "whd", t - 2 * DAY, t + 1)
        assert.deepStrictEqual(current, [Partitions.partitionName("webhook_deliveries", Partitions.monthStart(t))])
        assert.isAbove(all.length, window.length + 2)
        const attemptsOf = (names: ReadonlyArray<string>) =>
          names.map((n) => n.replace("webhook_deliveries", "webhook_attempts"))
        const eventsOf = (names: ReadonlyArray<string>) => names.map((n) => n.replace("webhook_deliveries", "events"))

        const ws = yield* workspace
        const endpointId = yield* endpoint(ws)
        const a = yield* event(ws, endpointId, t - DAY)
        yield* event(ws, endpointId, t - 2 * DAY)
        const at = Schemas.toTimestamp(t)

        const checks: Array<[string, ReadonlyArray<PlanReads.Read>, ReadonlyArray<string>]> = []
        const pulled = yield* partitionsRead(
          deliveries.claimDueMany([{ endpointId, now: Schemas.toTimestamp(t + 1), limit: 10 }])
        )
        assert.strictEqual(pulled.result[0]!.length, 2)
        checks.push(["pull", pulled.reads, [...window, ...eventsOf(current)]])
        const succeeded = yield* partitionsRead(deliveries.recordSuccesses([{
          id: a.deliveryId,
          endpointId,
          attempt: 1,
          at,
          responseStatus: 200,
          latencyMs: 3
        }]))
        assert.strictEqual(succeeded.result.size, 1)
        checks.push(["recordSuccesses", succeeded.reads, [...current, ...attemptsOf(current)]])
        const found = yield* partitionsRead(deliveries.find(ws, a.deliveryId))
        assert.strictEqual(Option.getOrThrow(found.result).attempts.length, 1)
        checks.push(["find", found.reads, [...current, ...attemptsOf(current)]])
        const listed = yield* partitionsRead(deliveries.list(ws, { endpointId }, 10, undefined))
        assert.strictEqual(listed.result.length, 2)
        checks.push(["list", listed.reads, [...window, ...attemptsOf(current)]])
        const due = yield* partitionsRead(deliveries.endpointsWithDueWork(at, 10))
        checks.push(["endpointsWithDueWork", due.reads, window])
        const stuck = yield* partitionsRead(deliveries.requeueStuck(Schemas.toTimestamp(t + 60_000), at))
        assert.strictEqual(stuck.result, 1)
        checks.push(["requeueStuck", stuck.reads, window])
        const claimed = yield* partitionsRead(deliveries.claim(a.deliveryId, at))
        checks.push(["claim", claimed.reads, [...current, ...eventsOf(current)]])
        const recorded = yield* partitionsRead(deliveries.record({
          id: a.deliveryId,
          attempt: 1,
          at,
          responseStatus: 500,
          reason: "server_error",
          latencyMs: 3,
          next: { status: "failed", nextAttemptAt: null }
        }))
        checks.push(["record", recorded.reads, [...current, ...attemptsOf(current)]])
        const replayed = yield* partitionsRead(deliveries.markReplayed(ws, a.deliveryId, at))
        checks.push(["markReplayed", replayed.reads, current])

        for (const [name, reads, allowed] of checks) {
          assert.isAbove(reads.length, 0, name)
          for (const read of reads) {
            const extra = read.partitions.filter((p) => !allowed.includes(p))
            assert.deepStrictEqual(extra, [], `${name}: ${read.statement}`)
          }
        }
        // each statement carrying the window reads the partitions on its generic plan as on the
        // plan made for its values: the window's bounds are constants, so the generic plan's row
        // estimates come from the statistics too
        const windowed = ["pull", "find", "list", "endpointsWithDueWork", "requeueStuck", "markReplayed"]
        assert.deepStrictEqual(
          checks.filter(([name]) => windowed.includes(name)).flatMap(([, reads]) => PlanReads.flipped(reads)),
          []
        )
        // the pull and the list did read their window's partitions (the check is not vacuous)
        assert.includeMembers(pulled.reads.flatMap((r) => r.partitions), [...current, ...eventsOf(current)])
      }))

    it.effect("a pull's generic plan takes an index of due deliveries, not the window's primary key, over a busy month", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
        const first = (yield* Partitions.partitions("webhook_deliveries"))[0]!
        const t = Partitions.addMonths(Ids.idTime(first.to)!, 1) + 45 * DAY
        yield* TestClock.setTime(t)
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(t + 60 * DAY)
        const ws = yield* workspace
        const busy = yield* endpoint(ws)
        const other = yield* endpoint(ws)
        const { eventId } = yield* event(ws, other, t - DAY)
        // 40,000 deliveries of the last days: 4,000 pending for the busy endpoint, the rest done
        const lower = Ids.idFloor("whd", t - 2 * DAY)
        yield* sql`INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status,
            next_attempt_at, created_at, updated_at)
          SELECT ${lower} || lpad(i::text, 16, '0'), CASE WHEN i % 10 = 0 THEN ${busy} ELSE ${other} END, ${ws},
            ${eventId}, 'message.queued', CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'succeeded' END,
            ${Schemas.toTimestamp(t - DAY)}::timestamptz, ${Schemas.toTimestamp(t - DAY)}::timestamptz,
            ${Schemas.toTimestamp(t - DAY)}::timestamptz
          FROM generate_series(1, 40000) i`
        yield* sql`ANALYZE webhook_deliveries`
        const pulled = yield* partitionsRead(
          deliveries.claimDueMany([{ endpointId: busy, now: Schemas.toTimestamp(t), limit: 10 }])
        )
        assert.strictEqual(pulled.result[0]!.length, 10)
        // with the window as parameters, the generic plan walked the primary key over the month
        // (its guess for a range of unknown bounds: a few rows) and sorted what it found
        assert.deepStrictEqual(PlanReads.flipped(pulled.reads), [])
        // the endpoint's due index, or the index of every pending delivery: here only the busy
        // endpoint's are pending, so the two are as narrow, and the planner took either from run to
        // run (the endpoint's after the file's other tests, the other alone)
        assert.isTrue(
          pulled.reads.some((r) =>
            r.scans.some((scan) =>
              scan.includes("endpoint_id_next_attempt_at") || scan.endsWith("_next_attempt_at_idx")
            )
          )
        )
      }))

    it.effect("retention drops whole partitions (attempts with their deliveries); reads stay right", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
        const keeper = yield* PartitionsRepo.PartitionsRepo
        const sql = yield* SqlClient.SqlClient
        const first = (yield* Partitions.partitions("webhook_deliveries"))[0]!
        const m1 = Ids.idTime(first.to)!
        const m2 = Partitions.addMonths(m1, 1)
        const ws = yield* workspace
        const endpointId = yield* endpoint(ws)
        // one delivery in the first partition, one in each of the next two months, each with an attempt
        const made: Array<{ at: number; id: string }> = []
        for (const at of [m1 - 10 * DAY, m1 + 15 * DAY, m2 + 5 * DAY]) {
          const { deliveryId } = yield* event(ws, endpointId, at)
          yield* sql`INSERT INTO webhook_attempts (delivery_id, attempt, at, response_status, failure_reason, latency_ms)
            VALUES (${deliveryId}, 1, ${Schemas.toTimestamp(at)}, 500, 'server_error', 3)`
          made.push({ at, id: deliveryId })
        }
        const [x, y, z] = made as [typeof made[0], typeof made[0], typeof made[0]]
        const visible = (id: string) => Effect.map(deliveries.find(ws, id), Option.isSome)

        // m2 + 10 days: the first partition's deliveries are all over 30 days old
        yield* TestClock.setTime(m2 + 10 * DAY)
        assert.deepStrictEqual(yield* keeper.dropExpired(m2 + 10 * DAY, KEEP), [
          "webhook_attempts_before",
          "webhook_deliveries_before"
        ])
        assert.isFalse(yield* visible(x.id))
        assert.isTrue(yield* visible(y.id))
        assert.isTrue(yield* visible(z.id))
        const listed = yield* deliveries.list(ws, {}, 10, undefined)
        assert.deepStrictEqual(listed.map((d) => d.id), [z.id, y.id])
        assert.deepStrictEqual(listed.map((d) => d.attempts.length), [1, 1])
        // events are kept (no EVENT_RETENTION_DAYS)
        assert.strictEqual((yield* Partitions.partitions("events"))[0]!.name, "events_before")

        // 33 days on: y is past retention (hidden at once), its month's partition not yet droppable
        yield* TestClock.setTime(m2 + 33 * DAY)
        assert.isFalse(yield* visible(y.id))
        assert.deepStrictEqual(yield* keeper.dropExpired(m2 + 33 * DAY, KEEP), [
          Partitions.partitionName("webhook_attempts", m1),
          Partitions.partitionName("webhook_deliveries", m1)
        ])
        assert.isTrue(yield* visible(z.id))
        const left = yield* sql<{ id: string }>`SELECT id FROM webhook_deliveries WHERE workspace_id = ${ws}`
        assert.deepStrictEqual(left.map((r) => r.id), [z.id])
        const attempts = yield* sql<{ delivery_id: string }>`SELECT delivery_id FROM webhook_attempts
          WHERE delivery_id IN (${x.id}, ${y.id}, ${z.id})`
        assert.deepStrictEqual(attempts.map((r) => r.delivery_id), [z.id])
        // events past EVENT_RETENTION_DAYS go the same way
        const dropped = yield* keeper.dropExpired(m2 + 33 * DAY, eventsKept(PartitionsRepo.MIN_EVENT_RETENTION_DAYS))
        assert.deepStrictEqual(dropped, [])
        const later = Partitions.addMonths(m2, 4)
        assert.includeMembers(yield* keeper.dropExpired(later, eventsKept(PartitionsRepo.MIN_EVENT_RETENTION_DAYS)), [
          "events_before"
        ])
      }))
  })

  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect.skipIf(TestDatabase.mode() === "embedded")(
      "a drop that waits on a long statement gives up after its lock timeout, changes nothing, and the next run drops",
      () =>
        Effect.gen(function*() {
          const keeper = yield* PartitionsRepo.PartitionsRepo
          const url = TestDatabase.testDatabaseUrl()!
          const [database] = yield* (yield* SqlClient.SqlClient)<{ name: string }>`SELECT current_database() AS name`
          const later = Partitions.addMonths(Date.now(), 3)
          const before = yield* Partitions.partitions("webhook_deliveries")
          // another session reads the deliveries in a transaction it keeps open (a long report)
          const reader = new pg.Client({ connectionString: TestDatabase.withDatabase(url, database!.name) })
          yield* Effect.promise(() => reader.connect())
          yield* Effect.addFinalizer(() => Effect.promise(() => reader.end()))
          yield* Effect.promise(() => reader.query("BEGIN; SELECT count(*) FROM webhook_deliveries"))

          const refused = yield* Effect.either(keeper.dropExpired(later, KEEP))
          assert.isTrue(refused._tag === "Left" && refused.left._tag === "DatabaseUnavailable")
          assert.deepStrictEqual(yield* Partitions.partitions("webhook_deliveries"), before)

          yield* Effect.promise(() => reader.query("COMMIT"))
          const dropped = yield* keeper.dropExpired(later, KEEP)
          assert.include(dropped, before[0]!.name)
          assert.notInclude((yield* Partitions.partitions("webhook_deliveries")).map((p) => p.name), before[0]!.name)
        }).pipe(Effect.scoped)
    )
  })

  layer(UnmigratedLayer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("an existing installation's rows move into the first partition, not copied, none lost", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Migrations.runThrough(137)
        const t = Date.now()
        const at = Schemas.toTimestamp(t)
        const ws = yield* Ids.newId("ws")
        const wh = yield* Ids.newId("wh")
        yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${ws}, 'w', ${at}, ${at})`
        yield* sql`INSERT INTO webhook_endpoints (id, workspace_id, url, event_types, status, secret_sealed,
          secret_last4, created_at, updated_at)
          VALUES (${wh}, ${ws}, 'https://hooks.example.com/in', '{*}', 'active', 'v1:x', 'abcd', ${at}, ${at})`
        // a year of history (ids made across it) and one delivery from this month
        const ages = [400, 200, 35, 1].map((d) => t - d * DAY)
        for (const [i, age] of ages.entries()) {
          const eventId = `${Ids.idFloor("evt", age)}${"0".repeat(15)}${i}`
          const deliveryId = `${Ids.idFloor("whd", age)}${"0".repeat(15)}${i}`
          yield* sql`INSERT INTO events (id, workspace_id, type, object_id, envelope, created_at)
            VALUES (${eventId}, ${ws}, 'message.queued', 'msg_x', '{}', ${Schemas.toTimestamp(age)})`
          yield* sql`INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status,
            created_at, updated_at) VALUES (${deliveryId}, ${wh}, ${ws}, ${eventId}, 'message.queued', 'succeeded',
            ${Schemas.toTimestamp(age)}, ${Schemas.toTimestamp(age)})`
          yield* sql`INSERT INTO webhook_attempts (delivery_id, attempt, at, failure_reason)
            VALUES (${deliveryId}, 1, ${Schemas.toTimestamp(age)}, 'ok')`
        }
        const before = yield* sql<{ oid: number }>`SELECT 'webhook_deliveries'::regclass::oid AS oid`

        const applied = yield* Migrations.run
        // the partition migrations among those after 137 (later releases add their own)
        assert.includeMembers(applied.map(([id]) => id), [150, 151, 152])
        for (const table of ["webhook_deliveries", "webhook_attempts", "events"]) {
          const parts = yield* Partitions.partitions(table)
          assert.strictEqual(parts[0]!.name, `${table}_before`)
          assert.isNull(parts[0]!.from)
          assert.isAtLeast(parts.length, 1 + Partitions.AHEAD_MONTHS)
          const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(parts[0]!.name)}`
          assert.strictEqual(count!.n, 4, table)
        }
        // the old table itself is the first partition (same relation: nothing copied)
        const [moved] = yield* sql<{ oid: number }>`SELECT 'webhook_deliveries_before'::regclass::oid AS oid`
        assert.strictEqual(moved!.oid, before[0]!.oid)
        // the attempts' ids go on from the same sequence; new rows land in their month's partition
        const later = Partitions.addMonths(Partitions.monthStart(t), 1) + DAY
        const laterId = `${Ids.idFloor("whd", later)}0000000000000009`
        yield* sql`INSERT INTO webhook_attempts (delivery_id, attempt, at, failure_reason)
          VALUES (${laterId}, 1, ${Schemas.toTimestamp(later)}, 'ok')`
        const [row] = yield* sql<{ id: string; part: string }>`SELECT id::text, tableoid::regclass::text AS part
          FROM webhook_attempts WHERE delivery_id = ${laterId}`
        assert.strictEqual(row!.id, "5")
        assert.strictEqual(row!.part, Partitions.partitionName("webhook_attempts", Partitions.monthStart(later)))
      }))
  })
})
