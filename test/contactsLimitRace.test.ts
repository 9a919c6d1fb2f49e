/**
 * The plan's `contacts` limit holds exactly when its doors race (docs/LIMITS.md "Plans"): sends to
 * new numbers and `POST /v1/contacts` fired at once with k places left get exactly k in, the rest
 * 409 `ENTITLEMENT_LIMIT_REACHED`, and the workspace ends at its limit; a send to a contact that
 * already counts is never refused; an import's batch takes its places in turn with them. Each
 * burst is held at a gate until every call has read the database (`gated`), so the race the old
 * check lost (8 of 8 sends in with 2 places left) happens every run, not by chance. Also when the database fails once mid-way (the app's Postgres
 * behind test/support/PgProxy.ts): the connection of one send killed as its write lands, or every
 * connection reset while sends wait for the lock; retried with their Idempotency-Keys, nothing
 * passes the limit, nothing that fits is lost, nothing is doubled. The lock behind it is
 * taken only where a counted contact may be made (a send to a counted contact goes while it is
 * held), and its count is the usage's. Real Postgres only: embedded mode has one connection, so
 * nothing there runs at once.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ContactsLimitLock, ContactsRepo, DatabaseConfig } from "@switchboard/db"
import { testDatabaseUrl } from "@switchboard/db/testing"
import type { Messaging } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect, Either, Fiber, Layer } from "effect"
import { api, eventually, type Refusal, refused, sandboxSetup } from "./support/Fixtures.js"
import * as PgProxy from "./support/PgProxy.js"
import * as TestApp from "./support/TestApp.js"

const proxied = PgProxy.layer

/**
 * The app's pool, wider than the default 10: while a burst waits at the gate (`gated`), the
 * runner's own statements that touch the workspace wait with it, each holding a connection, and
 * every call of the burst must hold one too.
 */
const POOL = 24
const database = Layer.effect(
  DatabaseConfig.DatabaseConfig,
  Effect.map(DatabaseConfig.DatabaseConfig, (config) => ({ ...config, maxConnections: POOL }))
).pipe(Layer.provide(proxied))

/** An Idempotency-Key's lease (docs/RETRIES.md "Requests: idempotency"). */
const LEASE_MS = 10_000

/** `count` numbers of one series, e.g. `+491512000001`, `+491512000002`... */
const numbers = (series: number, count: number) =>
  Array.from({ length: count }, (_, i) => `+49151${series}${String(i + 1).padStart(6, "0")}`)

/**
 * A sandbox workspace whose `recipients` are verified, with the `existing` contacts made through
 * the API and its plan's `contacts` limit set to their number plus `left`.
 */
const workspaceWith = (input: {
  readonly recipients: ReadonlyArray<string>
  readonly existing: ReadonlyArray<string>
  readonly left: number
}) =>
  Effect.gen(function*() {
    const { key, user } = yield* sandboxSetup(input.recipients)
    const client = yield* api(key)
    for (const phone of input.existing) yield* client.contacts.create({ payload: { phone_number: phone } })
    const limit = input.existing.length + input.left
    yield* Effect.flatMap(Operator.Operator, (o) => o.override(user.workspaceId, "contacts", limit)).pipe(
      Effect.provide(TestApp.operatorLayer)
    )
    return { client, limit, workspaceId: user.workspaceId }
  })

type Client = Effect.Effect.Success<ReturnType<typeof api>>

const send = (client: Client, to: string, idempotencyKey?: string) =>
  client.messages.send({
    payload: { to, text: { body: "hi" } },
    headers: idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey }
  })

/** The refusal every call beyond the limit gets (docs/API.md, "What counts against the `contacts` limit"). */
const assertLimitRefusal = (r: Refusal, limit: number) => {
  assert.strictEqual(r.status, 409, r.message)
  assert.strictEqual(r.code, "ENTITLEMENT_LIMIT_REACHED")
  assert.deepStrictEqual(r.details, { entitlement: "contacts", limit, used: limit })
}

/** Each call's outcome, the calls made at once: `Right` with what it made, `Left` with its refusal. */
const allAtOnce = <A, E, R>(calls: ReadonlyArray<Effect.Effect<A, E, R>>) =>
  Effect.gen(function*() {
    const results = yield* Effect.all(calls.map((call) => Effect.either(call)), { concurrency: "unbounded" })
    const outcomes: Array<Either.Either<A, Refusal>> = []
    for (const r of results) {
      outcomes.push(Either.isRight(r) ? Either.right(r.right) : Either.left(yield* refused(Effect.fail(r.left))))
    }
    return outcomes
  })

/**
 * A send with an Idempotency-Key, repeated with it as a client retries while the answer is the
 * database's failure (503) or the key's first request still running (409 `in_progress`): the send's
 * final answer, `Right` with its message or `Left` with its refusal, and how many requests it took.
 * A key whose first request lost its database before it could let go is the retry's once its
 * lease ends, 10 s later (docs/RETRIES.md "Requests: idempotency"): retried for three leases.
 */
const answered = (client: Client, to: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 3 * LEASE_MS
    for (let attempt = 1;; attempt++) {
      const result = yield* Effect.either(send(client, to, `key-${to}`))
      if (Either.isRight(result)) return { outcome: Either.right(result.right), attempts: attempt }
      const r = yield* refused(Effect.fail(result.left))
      const passing = r.status === 503 || (r.status === 409 && r.details["reason"] === "in_progress")
      if (!passing || Date.now() > deadline) return { outcome: Either.left(r), attempts: attempt }
      yield* Effect.sleep("200 millis")
    }
  })

/** The workspace's contacts by number, and what `GET /v1/usage` counts against the limit. */
const contactsOf = (client: Client) =>
  Effect.gen(function*() {
    const page = yield* client.contacts.list({ urlParams: { limit: 100 } })
    const usage = yield* client.plan.usage()
    return { phones: page.data.map((c) => c.phone_number).sort(), used: usage.current.contacts.used }
  })

/** How many statements wait for a contacts lock now (`pg_locks`). */
const lockWaiters = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND classid = ${ContactsLimitLock.CONTACTS_LOCK} AND NOT granted`,
    (rows) => rows[0]?.n ?? 0
  )

/**
 * How many of the burst's statements wait for a lock now (a row's, the contacts lock): sends'
 * writes, creates' inserts and locks. `pg_stat_activity` is read once per transaction unless its
 * snapshot is cleared; the runner's own statements that wait are left out.
 */
const waitingForLocks = (sql: SqlClient.SqlClient) =>
  Effect.zipRight(
    sql`SELECT pg_stat_clear_snapshot()`,
    Effect.map(
      sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'
          AND query ~ '^[[:space:]]*(WITH (go|claim) AS|INSERT INTO contacts|SELECT pg_advisory_xact_lock)'`,
      (rows) => rows[0]?.n ?? 0
    )
  )

/**
 * Runs `burst` (calls made at once) with every one of its `calls` statements having read the
 * database before any of them commits, as the race of several API processes at its widest, made
 * certain: the test holds the workspace's row (`FOR UPDATE`), so each statement that writes a row
 * of the workspace waits at its end for the foreign key's check of that row, its reads and writes
 * done; once all `calls` wait for a lock (that row, or the contacts lock before it), it lets go.
 */
const gated = <A, E>(sql: SqlClient.SqlClient, workspaceId: string, calls: number, burst: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const started: { burst?: Fiber.RuntimeFiber<A, E> } = {}
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`SELECT id FROM workspaces WHERE id = ${workspaceId} FOR UPDATE`
      started.burst = yield* Effect.fork(burst)
      yield* eventually(waitingForLocks(sql), (n) => n === calls, 20_000)
      assert.strictEqual(yield* waitingForLocks(sql), calls, "every call waits at the gate")
    }))
    if (started.burst === undefined) return yield* Effect.dieMessage("the burst never started")
    return yield* Fiber.join(started.burst)
  })

describe.skipIf(testDatabaseUrl() === undefined)("the contacts limit when its doors race", () => {
  layer(Layer.merge(TestApp.layer({}, { database }), proxied), {
    excludeTestServices: true,
    timeout: 180_000
  })((it) => {
    it.effect("lets exactly k of 8 parallel sends to new numbers in when k places are left, and every send to a known contact", () =>
      Effect.gen(function*() {
        const fresh = numbers(1, 8)
        const [known, ...others] = numbers(2, 3) as [string, ...Array<string>]
        const sql = yield* SqlClient.SqlClient
        const { client, limit, workspaceId } = yield* workspaceWith({
          recipients: [known, ...fresh],
          existing: [known, ...others],
          left: 2
        })
        const results = yield* gated(
          sql,
          workspaceId,
          fresh.length + 2,
          allAtOnce([
            ...fresh.map((to) => send(client, to)),
            send(client, known),
            send(client, known)
          ])
        )
        const toNew = results.slice(0, fresh.length)
        const accepted = toNew.flatMap((r, i) => Either.isRight(r) ? [fresh[i]!] : [])
        assert.strictEqual(accepted.length, 2, `accepted: ${accepted.join(", ")}`)
        for (const r of toNew) if (Either.isLeft(r)) assertLimitRefusal(r.left, limit)
        for (const r of results.slice(fresh.length)) {
          assert.isTrue(Either.isRight(r) && r.right.status === "queued", "a send to a known contact is never refused")
        }
        const after = yield* contactsOf(client)
        assert.strictEqual(after.used, limit)
        assert.strictEqual(after.phones.length, limit)
        for (const phone of accepted) assert.include(after.phones, phone)
      }))

    it.effect("shares the last places between parallel creates and sends: exactly k of them get in", () =>
      Effect.gen(function*() {
        const toSend = numbers(3, 5)
        const toCreate = numbers(4, 5)
        const sql = yield* SqlClient.SqlClient
        const { client, limit, workspaceId } = yield* workspaceWith({
          recipients: toSend,
          existing: numbers(5, 2),
          left: 3
        })
        const results = yield* gated(
          sql,
          workspaceId,
          toSend.length + toCreate.length,
          allAtOnce<void, unknown, never>([
            ...toSend.map((to) => Effect.asVoid(send(client, to))),
            ...toCreate.map((phone_number) => Effect.asVoid(client.contacts.create({ payload: { phone_number } })))
          ])
        )
        assert.strictEqual(results.filter(Either.isRight).length, 3)
        for (const r of results) if (Either.isLeft(r)) assertLimitRefusal(r.left, limit)
        const after = yield* contactsOf(client)
        assert.strictEqual(after.used, limit)
        assert.strictEqual(after.phones.length, limit)
      }))

    it.effect(
      "keeps the limit when a send's connection is killed as its write lands: retried with its key, none lost or doubled",
      () =>
        Effect.gen(function*() {
          const proxy = yield* PgProxy.Proxy
          const fresh = numbers(6, 6)
          const sql = yield* SqlClient.SqlClient
          const { client, limit, workspaceId } = yield* workspaceWith({
            recipients: fresh,
            existing: numbers(7, 2),
            left: 3
          })
          // the first send's write runs and commits, and its answer never comes back
          const killed = proxy.dropOnStatement(/^WITH claim AS/, { only: "that" })
          const answers = yield* gated(
            sql,
            workspaceId,
            fresh.length,
            Effect.all(fresh.map((to) => answered(client, to)), { concurrency: "unbounded" })
          )
          yield* Effect.promise(() => killed).pipe(Effect.timeout("5 seconds"), Effect.orDie)
          assert.isTrue(answers.some((a) => a.attempts > 1), "the killed send was retried")
          const results = answers.map((a) => a.outcome)
          const accepted = results.flatMap((r, i) => Either.isRight(r) ? [{ to: fresh[i]!, message: r.right }] : [])
          assert.strictEqual(accepted.length, 3, `accepted: ${accepted.map((a) => a.to).join(", ")}`)
          for (const r of results) if (Either.isLeft(r)) assertLimitRefusal(r.left, limit)
          const after = yield* contactsOf(client)
          assert.strictEqual(after.used, limit)
          // each accepted send is one message, the one its answer names
          const outbound = yield* client.messages.list({ urlParams: { direction: "outbound", limit: 100 } })
          assert.deepStrictEqual(
            outbound.data.map((m) => m.id).sort(),
            accepted.map((a) => a.message.id).sort()
          )
        })
    )

    it.effect(
      "keeps the limit when every connection is reset while sends wait for the lock: one place, one of two sends",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const proxy = yield* PgProxy.Proxy
          const fresh = numbers(10, 2)
          const { client, limit, workspaceId } = yield* workspaceWith({
            recipients: fresh,
            existing: numbers(11, 1),
            left: 1
          })
          const both = Effect.all(fresh.map((to) => answered(client, to)), { concurrency: "unbounded" })
          const started: { sends?: Fiber.RuntimeFiber<Effect.Effect.Success<typeof both>> } = {}
          // another door holds the lock, both sends wait for it, and the database goes away for
          // everyone: the holder's transaction with it (rolled back; its COMMIT dies, a defect)
          yield* Effect.exit(sql.withTransaction(Effect.gen(function*() {
            yield* sql`SELECT pg_advisory_xact_lock(${ContactsLimitLock.CONTACTS_LOCK}, hashtext(${workspaceId}))`
            started.sends = yield* Effect.fork(both)
            yield* eventually(lockWaiters(sql), (n) => n === 2, 10_000)
            assert.strictEqual(yield* lockWaiters(sql), 2, "both sends wait for the lock")
            proxy.drop()
          })))
          if (started.sends === undefined) return yield* Effect.dieMessage("the sends never started")
          const answers = yield* Fiber.join(started.sends)
          assert.deepStrictEqual(
            answers.map((a) => a.attempts > 1),
            [true, true],
            "both sends failed once, then retried"
          )
          const results = answers.map((a) => a.outcome)
          assert.strictEqual(results.filter(Either.isRight).length, 1)
          for (const r of results) if (Either.isLeft(r)) assertLimitRefusal(r.left, limit)
          const after = yield* contactsOf(client)
          assert.strictEqual(after.used, limit)
          const outbound = yield* client.messages.list({ urlParams: { direction: "outbound", limit: 100 } })
          assert.deepStrictEqual(
            outbound.data.map((m) => m.id),
            results.flatMap((r) => Either.isRight(r) ? [r.right.id] : [])
          )
        })
    )

    it.effect("takes the lock only for a new number: a send to a counted contact goes while the lock is held", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [known, fresh] = numbers(9, 2) as [string, string]
        const { client, workspaceId } = yield* workspaceWith({ recipients: [known, fresh], existing: [known], left: 5 })
        const toFresh = yield* sql.withTransaction(Effect.gen(function*() {
          // another door holds the workspace's contacts lock (a create, an import's batch)
          yield* sql`SELECT pg_advisory_xact_lock(${ContactsLimitLock.CONTACTS_LOCK}, hashtext(${workspaceId}))`
          const toKnown = yield* send(client, known)
          assert.strictEqual(toKnown.status, "queued")
          const waiting = yield* Effect.fork(send(client, fresh))
          yield* eventually(lockWaiters(sql), (n) => n === 1, 10_000)
          assert.strictEqual(yield* lockWaiters(sql), 1, "the send to a new number waits for the lock")
          return waiting
        }))
        assert.strictEqual((yield* Fiber.join(toFresh)).status, "queued")
      }))

    it.effect("serialises an import's batch with the sends: with 2 places left, an import of 3 and 3 sends make 2", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const toSend = numbers(12, 3)
        const toImport = numbers(13, 3)
        const { client, limit, workspaceId } = yield* workspaceWith({
          recipients: toSend,
          existing: numbers(14, 1),
          left: 2
        })
        const started: {
          sends?: Fiber.RuntimeFiber<ReadonlyArray<Either.Either<Messaging.Message, Refusal>>>
        } = {}
        // another door holds the lock: the sends and the import's batch all wait for it, then
        // take the places one at a time
        const queued = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(${ContactsLimitLock.CONTACTS_LOCK}, hashtext(${workspaceId}))`
          const queued = yield* client.contactImports.create({
            payload: { file: Buffer.from(`phone_number\n${toImport.join("\n")}\n`).toString("base64") },
            headers: {}
          })
          started.sends = yield* Effect.fork(allAtOnce(toSend.map((to) => send(client, to))))
          yield* eventually(lockWaiters(sql), (n) => n === toSend.length + 1, 30_000)
          assert.strictEqual(yield* lockWaiters(sql), toSend.length + 1, "the sends and the import's batch wait")
          return queued
        }))
        if (started.sends === undefined) return yield* Effect.dieMessage("the sends never started")
        const sent = yield* Fiber.join(started.sends)
        for (const r of sent) if (Either.isLeft(r)) assertLimitRefusal(r.left, limit)
        const imported = yield* eventually(
          client.contactImports.get({ path: { importId: queued.id } }),
          (i) => i.status === "completed",
          30_000
        )
        assert.strictEqual(imported.created + sent.filter(Either.isRight).length, 2)
        assert.strictEqual(imported.failed, 3 - imported.created)
        const after = yield* contactsOf(client)
        assert.strictEqual(after.used, limit)
      }))

    it.effect("counts under the lock as everywhere else: group chat only contacts without a 1:1 conversation left out", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // the database function repeats the rule of every other count: the same text
        const rule = sql`${ContactsRepo.ContactCtes.counted(sql)}`.compile()[0]
        const [source] = yield* sql<
          { prosrc: string }
        >`SELECT prosrc FROM pg_proc WHERE proname = 'contacts_used_locked'`
        assert.strictEqual(source?.prosrc.split(rule).length, 3, `${rule} in\n${source?.prosrc}`)
        // and counts what GET /v1/usage counts
        const [a, b, c] = numbers(8, 3) as [string, string, string]
        const { client, workspaceId } = yield* workspaceWith({ recipients: [b], existing: [a], left: 10 })
        yield* send(client, b)
        yield* client.contacts.create({ payload: { phone_number: c } })
        // b has a 1:1 conversation (counted), c has none (not counted)
        yield* sql`UPDATE contacts SET group_chat_only = true WHERE phone_number IN (${b}, ${c})`
        const [locked] = yield* sql<{ used: number | null }>`SELECT ${
          ContactsLimitLock.usedLocked(sql, workspaceId, "+4915199999999")
        } AS used`
        const usage = yield* client.plan.usage()
        assert.strictEqual(usage.current.contacts.used, 2)
        assert.strictEqual(locked?.used, 2)
        // a number that counts already needs no room
        const [known] = yield* sql<{ used: number | null }>`SELECT ${
          ContactsLimitLock.usedLocked(sql, workspaceId, b)
        } AS used`
        assert.strictEqual(known?.used, null)
      }))
  })
})
