import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import {
  ContactsRepo,
  ConversationsRepo,
  DispatchQueueRepo,
  MessagesRepo,
  Partitions,
  SandboxNetworkRepo,
  SendChecksRepo
} from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, MessageCategory, type MessageStateMachine, Schemas } from "@switchboard/domain"
import { Effect, Layer, Option, TestClock, TestContext } from "effect"

const TestLayer = Layer.mergeAll(
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  DispatchQueueRepo.DispatchQueueRepo.Default,
  SandboxNetworkRepo.SandboxNetworkRepo.Default,
  SendChecksRepo.SendChecksRepo.Default
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const at = (offsetMs: number) => Schemas.toTimestamp(Date.now() + offsetMs)

/** Noon (UTC) of the last day of the month holding `ms` (epoch ms). */
const monthsLastDayNoon = (ms: number) => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0, 12)
}

/** The two statements that take a message for dispatch; each answers whether it moved. */
const TAKES: ReadonlyArray<
  readonly [
    string,
    (id: string, waiting?: ReadonlyArray<string>) => Effect.Effect<boolean, unknown, MessagesRepo.MessagesRepo>
  ]
> = [
  [
    "transition",
    (id, waiting = []) =>
      Effect.flatMap(
        MessagesRepo.MessagesRepo,
        (repo) => Effect.map(repo.transition(id, "dispatching", { waitingRecipients: waiting }), Option.isSome)
      )
  ],
  [
    "takeForDispatch",
    (id, waiting = []) =>
      Effect.flatMap(
        MessagesRepo.MessagesRepo,
        (repo) =>
          Effect.map(
            repo.takeForDispatch([{ id, at: at(0), waiting, lease: undefined }]),
            (moved) => moved.length === 1
          )
      )
  ]
]

/** A workspace with one channel per entry of `messages`, each holding that one message. */
const channelsWith = (
  messages: ReadonlyArray<
    { status: MessageStateMachine.MessageStatus; direction?: "inbound" | "outbound"; ageMs: number }
  >
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* MessagesRepo.MessagesRepo
    const contacts = yield* ContactsRepo.ContactsRepo
    const conversations = yield* ConversationsRepo.ConversationsRepo
    const workspaceId = yield* Ids.newId("ws")
    yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${at(0)}, ${
      at(0)
    })`
    const channelIds: Array<string> = []
    for (const [i, m] of messages.entries()) {
      const channelId = yield* Ids.newId("ch")
      yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, created_at, updated_at)
        VALUES (${channelId}, ${workspaceId}, ${`c${i}`}, 'sandbox', 'connected', ${at(0)}, ${at(0)})`
      const contact = yield* contacts.upsertContact(workspaceId, "+4915112345678", at(0))
      const conversationId = yield* conversations.upsertConversation(workspaceId, channelId, contact.id, at(0))
      const message = yield* repo.insert({
        id: yield* Ids.newId("msg"),
        workspaceId,
        channelId,
        conversationId,
        contactId: contact.id,
        direction: m.direction ?? "outbound",
        from: null,
        to: "+4915112345678",
        body: "hi",
        category: "utility",
        priority: 2,
        status: m.status,
        metadata: {},
        now: at(-m.ageMs)
      })
      yield* sql`UPDATE messages SET updated_at = ${at(-m.ageMs)} WHERE id = ${message.id}`
      channelIds.push(channelId)
    }
    return channelIds
  }).pipe(Effect.orDie)

/** One connected channel of a new workspace, and a way to insert its messages in a given status. */
const oneChannel = Effect.gen(function*() {
  const [channelId] = yield* channelsWith([{ status: "sent", ageMs: 0 }])
  const sql = yield* SqlClient.SqlClient
  const repo = yield* MessagesRepo.MessagesRepo
  const row = (yield* sql<{ workspace_id: string; conversation_id: string; contact_id: string }>`
    SELECT workspace_id, conversation_id, contact_id FROM messages WHERE channel_id = ${channelId!}`)[0]!
  const insert = (
    status: MessageStateMachine.MessageStatus,
    options: { category?: MessageCategory.Category; to?: string } = {}
  ) =>
    Effect.flatMap(Ids.newId("msg"), (id) =>
      repo.insert({
        id,
        workspaceId: row.workspace_id,
        channelId: channelId!,
        conversationId: row.conversation_id,
        contactId: row.contact_id,
        direction: "outbound",
        from: null,
        to: options.to ?? "+4915112345678",
        body: "hi",
        category: options.category ?? "utility",
        priority: MessageCategory.PRIORITY[options.category ?? "utility"],
        status,
        metadata: {},
        now: at(0)
      }))
  /** what a `count(*)` of the queue says: the counter must always agree */
  const counted = Effect.map(
    sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE channel_id = ${channelId!} AND status = 'queued'`,
    (rows) => rows[0]!.n
  )
  /** what the send path's backlog check reads */
  const queued = Effect.flatMap(SendChecksRepo.SendChecksRepo, (checks) =>
    Effect.map(
      checks.facts({ workspaceId: row.workspace_id, channelId: channelId!, to: "+4915112345678", now: at(0) }),
      (facts) => Option.getOrThrow(facts).queued
    ))
  return { channelId: channelId!, insert, counted, queued }
}).pipe(Effect.orDie)

/**
 * What `effect` read of `tables`: the difference of this backend's own counts around it (pending
 * statistics, not flushed inside a transaction, so both reads and the effect share one).
 */
const readsDuring = <A, E, R>(tables: ReadonlyArray<string>, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const counts = Effect.map(
      // rows read by sequential scans, not scans: a month's partition the window did not prune and
      // that holds nothing (made ahead) may be scanned, reading nothing
      sql<{ seq_scan: number; idx_tup_fetch: number }>`
        SELECT COALESCE(sum(s.seq_tup_read), 0)::int AS seq_scan, COALESCE(sum(s.idx_tup_fetch), 0)::int AS idx_tup_fetch
        FROM pg_stat_xact_user_tables s
        -- a partitioned table (messages: docs/OPERATING.md "Partitions and retention") is its partitions
        LEFT JOIN pg_inherits i ON i.inhrelid = s.relid LEFT JOIN pg_class p ON p.oid = i.inhparent
        WHERE COALESCE(p.relname, s.relname) IN ${sql.in(tables)}`,
      (rows) => rows[0]!
    )
    return sql.withTransaction(Effect.gen(function*() {
      const before = yield* counts
      const result = yield* effect
      const after = yield* counts
      return {
        result,
        read: { seq_scan: after.seq_scan - before.seq_scan, idx_tup_fetch: after.idx_tup_fetch - before.idx_tup_fetch }
      }
    }))
  })

/**
 * The id of copy `g` of message `of` (`copiesOf`) tagged `tag` (digits): `of`'s time, so it lies
 * in `of`'s month (messages are partitioned by id), then the tag and `g`.
 */
const copyId = (of: string, tag: string, g: number) =>
  `${of.slice(0, 14)}${tag}${String(g).padStart(16 - tag.length, "0")}`

/**
 * 1,500 copies of message `of` (same channel, conversation and recipient), ids `copyId(of, tag, g)`,
 * in `status`, each `g` seconds younger: a long queue behind it, or a long settled history.
 */
const copiesOf = (of: string, tag: string, status: string, body: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction, to_number,
        type, body, category, priority, status, created_at, updated_at)
      SELECT substr(m.id, 1, 14) || ${tag} || lpad(g::text, ${16 - tag.length}, '0'), m.workspace_id, m.channel_id,
        m.conversation_id, m.contact_id, 'outbound',
        m.to_number, 'text', ${body}, m.category, m.priority, ${status}, m.created_at + make_interval(secs => g),
        m.updated_at
      FROM messages m, generate_series(1, 1500) g WHERE m.id = ${of}`
  )

describe("DispatchQueueRepo", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("finds channels whose receipts are overdue at any stage before read, outbound only", () =>
      Effect.gen(function*() {
        const repo = yield* DispatchQueueRepo.DispatchQueueRepo
        const [accepted, sent, delivered, read, recent, inbound, acceptedLongAgo, sentLongAgo] = yield* channelsWith([
          { status: "provider_accepted", ageMs: 60_000 },
          { status: "sent", ageMs: 60_000 },
          { status: "delivered", ageMs: 60_000 },
          { status: "read", ageMs: 60_000 },
          { status: "sent", ageMs: 5_000 },
          // inbound messages are recorded `delivered` and stay there
          { status: "delivered", direction: "inbound", ageMs: 60_000 },
          { status: "provider_accepted", ageMs: 20 * 60_000 },
          { status: "sent", ageMs: 20 * 60_000 }
        ])
        const found = yield* repo.channelsAwaitingReceipts({
          overdueBefore: at(-30_000),
          acceptedAfter: at(-3600_000),
          laterStagesAfter: at(-300_000),
          limit: 100
        })
        const ours = new Set(found)
        assert.isTrue(ours.has(accepted!), "accepted, no receipt")
        assert.isTrue(ours.has(sent!), "sent, no delivery receipt")
        assert.isTrue(ours.has(delivered!), "delivered, no read receipt")
        assert.isTrue(ours.has(acceptedLongAgo!), "accepted within the hour")
        assert.isFalse(ours.has(read!), "read: nothing awaited")
        assert.isFalse(ours.has(recent!), "not overdue yet")
        assert.isFalse(ours.has(inbound!), "inbound")
        assert.isFalse(ours.has(sentLongAgo!), "stopped at sent longer than the repair window")
      }))

    it.effect("pages through channels with due work, so channels past the first page are reached", () =>
      Effect.gen(function*() {
        const repo = yield* DispatchQueueRepo.DispatchQueueRepo
        const withDue = yield* channelsWith(Array.from({ length: 5 }, () => ({ status: "queued" as const, ageMs: 0 })))
        const [idle] = yield* channelsWith([{ status: "sent", ageMs: 0 }])
        // the sweeper's walk: a page of 2 after the last id woken, back to the start after a short page
        const woken: Array<string> = []
        let cursor = ""
        for (let sweep = 0; sweep < 4; sweep++) {
          const page = (yield* repo.channelsWithDueWork(2, cursor)).map((c) => c.channelId)
          woken.push(...page)
          cursor = page.length < 2 ? "" : page[page.length - 1]!
        }
        const ours = new Set(withDue)
        assert.deepStrictEqual(new Set(woken.filter((id) => ours.has(id))), ours, "every channel with due work")
        assert.isFalse(woken.includes(idle!), "a channel with nothing queued")
        assert.deepStrictEqual(woken.slice(0, 2), [...withDue].sort().slice(0, 2), "in id order")
      }))

    it.effect("pages through channels awaiting receipts the same way", () =>
      Effect.gen(function*() {
        const repo = yield* DispatchQueueRepo.DispatchQueueRepo
        const overdue = yield* channelsWith(
          Array.from({ length: 5 }, () => ({ status: "sent" as const, ageMs: 60_000 }))
        )
        const woken: Array<string> = []
        let after = ""
        // one full cycle (other tests' channels of this database await receipts too)
        for (let sweep = 0; sweep < 20 && (sweep === 0 || after !== ""); sweep++) {
          const page = yield* repo.channelsAwaitingReceipts({
            overdueBefore: at(-30_000),
            acceptedAfter: at(-3600_000),
            laterStagesAfter: at(-300_000),
            limit: 2,
            after
          })
          woken.push(...page)
          after = page.length < 2 ? "" : page[page.length - 1]!
        }
        const ours = new Set(overdue)
        assert.deepStrictEqual(new Set(woken.filter((id) => ours.has(id))), ours, "every channel awaiting receipts")
      }))

    it.effect("keeps a channel's queued count exact through every kind of write to its messages", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* MessagesRepo.MessagesRepo
        const { channelId, counted, insert, queued } = yield* oneChannel
        const expectCount = (n: number, step: string) =>
          Effect.gen(function*() {
            assert.strictEqual(yield* counted, n, `count(*) after ${step}`)
            assert.strictEqual(yield* queued, n, `counter after ${step}`)
          })
        yield* expectCount(0, "nothing queued (one sent message)")
        const ids: Array<string> = []
        for (let i = 0; i < 5; i++) ids.push((yield* insert("queued")).id)
        yield* insert("failed_retryable")
        yield* expectCount(5, "five sends")
        yield* repo.transition(ids[0]!, "dispatching")
        yield* repo.transition(ids[1]!, "dispatching")
        yield* expectCount(3, "two dispatch claims")
        // a refused move changes nothing
        yield* repo.transition(ids[0]!, "cancelled")
        yield* expectCount(3, "a refused transition")
        yield* repo.transition(ids[0]!, "failed_retryable")
        yield* repo.transition(ids[0]!, "queued")
        yield* expectCount(4, "a retry back to the queue")
        yield* repo.transition(ids[2]!, "cancelled")
        yield* repo.transition(ids[3]!, "expired")
        yield* expectCount(2, "a cancellation and an expiry")
        // one statement moving several rows, and a statement that leaves the status alone
        yield* sql`UPDATE messages SET status = 'expired' WHERE channel_id = ${channelId} AND status = 'queued'
          AND id <> ${ids[4]!}`
        yield* sql`UPDATE messages SET updated_at = now() WHERE channel_id = ${channelId}`
        yield* expectCount(1, "a bulk expiry and a touch")
        yield* sql`DELETE FROM message_transitions WHERE message_id = ${ids[4]!}`
        yield* sql`DELETE FROM messages WHERE id = ${ids[4]!}`
        yield* expectCount(0, "a delete")
      }))

    it.effect("keeps the count exact under concurrent sends and moves out of the queue on one channel", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* MessagesRepo.MessagesRepo
        const { channelId, counted, insert, queued } = yield* oneChannel
        // 120 sends, each followed at once by a cancellation of every other one, 16 at a time (not
        // dispatch claims: those out of the queue's order are refused)
        yield* Effect.forEach(
          Array.from({ length: 120 }, (_, i) => i),
          (i) =>
            Effect.flatMap(
              insert("queued"),
              (m) => i % 2 === 0 ? Effect.asVoid(repo.transition(m.id, "cancelled")) : Effect.void
            ),
          { concurrency: 16, discard: true }
        )
        assert.strictEqual(yield* counted, 60)
        assert.strictEqual(yield* queued, 60)
        // leave no due work behind for the other tests of this database
        yield* sql`UPDATE messages SET status = 'expired' WHERE channel_id = ${channelId} AND status = 'queued'`
        assert.strictEqual(yield* queued, 0)
      }))

    // the dispatch-order guard, in both statements that take a message for dispatch: the move of
    // one message, and the take of several channels' messages at once (`takeForDispatch`)
    for (const [how, take] of TAKES) {
      it.effect(`refuses a dispatch while a more urgent message of its channel is due (${how})`, () =>
        Effect.gen(function*() {
          const { insert } = yield* oneChannel
          const marketing = yield* insert("queued", { category: "marketing" })
          const urgent = yield* insert("queued", { category: "authentication", to: "+4915100000001" })
          assert.isFalse(yield* take(marketing.id), "outranked")
          assert.isTrue(yield* take(urgent.id), "the urgent one goes")
          assert.isTrue(yield* take(marketing.id), "then the next")
        }))

      it.effect(`refuses a dispatch while an earlier message of the same priority is due (${how})`, () =>
        Effect.gen(function*() {
          const { insert } = yield* oneChannel
          const first = yield* insert("queued")
          const second = yield* insert("queued", { to: "+4915100000001" })
          assert.isFalse(yield* take(second.id), "FIFO within a priority")
          assert.isTrue(yield* take(first.id))
          assert.isTrue(yield* take(second.id))
        }))

      it.effect(`lets a dispatch go while the more urgent message is not due or its recipient must wait (${how})`, () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const { insert } = yield* oneChannel
          // a retry waiting for its backoff
          const retry = yield* insert("queued", { category: "authentication", to: "+4915100000001" })
          yield* sql`UPDATE messages SET next_attempt_at = ${at(60_000)} WHERE id = ${retry.id}`
          // recipients at their spacing cap (QR)
          const spaced = yield* insert("queued", { category: "authentication", to: "+4915100000002" })
          const spaced2 = yield* insert("queued", { category: "authentication", to: "+4915100000004" })
          const marketing = yield* insert("queued", { category: "marketing", to: "+4915100000003" })
          assert.isFalse(yield* take(marketing.id), "the spaced recipients outrank it unless they wait")
          assert.isFalse(yield* take(marketing.id, ["+4915100000002"]), "one of them does not wait")
          assert.isTrue(
            yield* take(marketing.id, ["+4915100000002", "+4915100000004"]),
            "neither the retry nor the waiting recipients hold it back"
          )
          yield* sql`UPDATE messages SET status = 'expired' WHERE id IN ${sql.in([retry.id, spaced.id, spaced2.id])}`
        }))
    }

    it.effect("takes several channels' messages in one statement, each guarded on its own", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* MessagesRepo.MessagesRepo
        const a = yield* oneChannel
        const b = yield* oneChannel
        const c = yield* oneChannel
        const d = yield* oneChannel
        const fromA = yield* a.insert("queued")
        const outranked = yield* b.insert("queued", { category: "marketing" })
        const urgent = yield* b.insert("queued", { category: "authentication", to: "+4915100000001" })
        const disconnected = yield* c.insert("queued")
        yield* sql`UPDATE channels SET status = 'disconnected' WHERE id = ${c.channelId}`
        const cancelled = yield* d.insert("queued")
        yield* sql`UPDATE messages SET status = 'cancelled' WHERE id = ${cancelled.id}`
        const slot = at(-5)
        const moved = yield* repo.takeForDispatch(
          [fromA, outranked, disconnected, cancelled].map((m) => ({
            id: m.id,
            at: slot,
            waiting: [],
            lease: undefined
          }))
        )
        assert.deepStrictEqual(moved.map((m) => [m.id, m.from, m.status]), [[fromA.id, "queued", "dispatching"]])
        const statuses = yield* sql<{ id: string; status: string }>`SELECT id, status FROM messages
          WHERE id IN ${sql.in([fromA.id, outranked.id, urgent.id, disconnected.id, cancelled.id])}`
        assert.deepStrictEqual(
          Object.fromEntries(statuses.map((r) => [r.id, r.status])),
          {
            [fromA.id]: "dispatching",
            [outranked.id]: "queued",
            [urgent.id]: "queued",
            [disconnected.id]: "queued",
            [cancelled.id]: "cancelled"
          }
        )
        // its timeline row has the send slot's time
        const timeline = yield* sql<{ from_state: string; to_state: string; at: Date }>`
          SELECT from_state, to_state, at FROM message_transitions WHERE message_id = ${fromA.id} ORDER BY id`
        assert.deepStrictEqual(timeline.slice(-1).map((t) => [t.from_state, t.to_state]), [["queued", "dispatching"]])
        assert.strictEqual(new Date(timeline.at(-1)!.at).toISOString(), slot)
        yield* sql`UPDATE messages SET status = 'expired' WHERE id IN ${
          sql.in([outranked.id, urgent.id, disconnected.id])
        }`
      }))

    it.effect("takes a message for dispatch without reading the rest of the queue, however long it is", () =>
      Effect.gen(function*() {
        // the outrank probe is one index probe at the head of the channel's queue. With the
        // reach-out timelock in the dispatch order the planner turned it into a hash anti join over
        // every queued message of every channel: the take cost grew with the backlog (32 ms per
        // dispatch at 21,000 queued, bench/RESULTS.md 1 "A dispatch take that read the whole queue")
        const sql = yield* SqlClient.SqlClient
        const repo = yield* MessagesRepo.MessagesRepo
        const { channelId, insert } = yield* oneChannel
        const head = yield* insert("queued")
        yield* copiesOf(head.id, "1", "queued", "later")
        yield* sql`ANALYZE messages`
        const { read, result: moved } = yield* readsDuring(["messages"], repo.transition(head.id, "dispatching"))
        assert.isTrue(Option.isSome(moved), "the head of the queue goes")
        assert.strictEqual(read.seq_scan, 0, "no sequential scan of messages")
        assert.isBelow(read.idx_tup_fetch, 20, "a few index entries, not the queue")
        assert.isTrue(
          Option.isNone(yield* repo.transition(copyId(head.id, "1", 2), "dispatching")),
          "the order still holds"
        )
        yield* sql`UPDATE messages SET status = 'expired' WHERE channel_id = ${channelId} AND status = 'queued'`
      }))

    it.effect("finds the row a take updates by its id when the statistics last saw the queue nearly empty", () =>
      Effect.gen(function*() {
        // autovacuum analyzes `messages` now and then, so the planner often believes the queue is
        // as short as it was then: it walked `messages_undispatched_created` (every queued message
        // of every channel) to find the one row the take updates, and again to probe the head of
        // the channel's queue: 849 pages a take at 100k rows (bench/RESULTS.md 11d). The row is now
        // found by its id, and `messages_queue` is the only index the probe can use (11f).
        const sql = yield* SqlClient.SqlClient
        const repo = yield* MessagesRepo.MessagesRepo
        const { channelId, insert } = yield* oneChannel
        const head = yield* insert("queued")
        yield* sql`ANALYZE messages`
        yield* copiesOf(head.id, "2", "queued", "later")
        const { read, result: moved } = yield* readsDuring(["messages"], repo.transition(head.id, "dispatching"))
        assert.isTrue(Option.isSome(moved), "the head of the queue goes")
        assert.strictEqual(read.seq_scan, 0, "no sequential scan of messages")
        assert.isBelow(read.idx_tup_fetch, 20, "the row and the head of the queue, not the 1,500 queued behind it")
        assert.isTrue(
          Option.isNone(yield* repo.transition(copyId(head.id, "2", 2), "dispatching")),
          "the order still holds"
        )
        yield* sql`UPDATE messages SET status = 'expired' WHERE channel_id = ${channelId} AND status = 'queued'`
      }))

    it.effect("reads, takes and measures one channel's queue without walking another channel's backlog, whatever the statistics last saw", () =>
      Effect.gen(function*() {
        // with 1M rows autovacuum analyzes `messages` rarely, so the planner's view of the queue is
        // whatever it was then; while it believed the queue empty it walked the expiry sweep's
        // index (every undispatched message of every channel, by age) for one channel's queue
        // read, its take and the backlog gauge: 618, 2,272 and 13,000 pages a call with 10
        // channels' backlog (bench/RESULTS.md 11f). That index now serves the expiry sweep alone.
        const sql = yield* SqlClient.SqlClient
        const queue = yield* DispatchQueueRepo.DispatchQueueRepo
        const repo = yield* MessagesRepo.MessagesRepo
        const busy = yield* oneChannel
        const quiet = yield* oneChannel
        yield* sql`UPDATE messages SET status = 'expired' WHERE status IN ('queued', 'failed_retryable')`
        yield* sql`ANALYZE messages`
        const backlogHead = yield* busy.insert("queued")
        yield* copiesOf(backlogHead.id, "3", "queued", "another channel's backlog")
        const first = yield* quiet.insert("queued")
        const second = yield* quiet.insert("queued", { to: "+4915100000001" })

        const read = yield* readsDuring(["messages"], queue.nextQueued(quiet.channelId, 20))
        assert.deepStrictEqual(read.result.map((m) => m.id), [first.id, second.id])
        assert.strictEqual(read.read.seq_scan, 0, "no sequential scan of messages")
        assert.isBelow(read.read.idx_tup_fetch, 20, "the channel's two messages, not the other's 1,501")

        const gauge = yield* readsDuring(["messages"], queue.backlog())
        assert.deepStrictEqual(
          gauge.result.filter((c) => c.channelId === quiet.channelId || c.channelId === busy.channelId)
            .map((c) => [c.channelId, c.queued]).sort(),
          [[busy.channelId, 1501], [quiet.channelId, 2]].sort()
        )
        assert.isBelow(gauge.read.idx_tup_fetch, 20, "the head of each channel's queue")

        const take = yield* readsDuring(
          ["messages"],
          repo.takeForDispatch([{ id: first.id, at: at(-5), waiting: [], lease: undefined }])
        )
        assert.deepStrictEqual(take.result.map((m) => m.id), [first.id])
        assert.isBelow(take.read.idx_tup_fetch, 20, "the row and the head of its channel's queue")

        // the expiry sweep still finds the old ones through its own index
        yield* sql`UPDATE messages SET created_at = created_at - interval '2 days' WHERE id = ${second.id}`
        const expiry = yield* readsDuring(["messages"], queue.staleQueued(at(-86_400_000), 10))
        assert.deepStrictEqual(expiry.result, [second.id])
        assert.strictEqual(expiry.read.seq_scan, 0, "no sequential scan of messages")
        assert.isBelow(expiry.read.idx_tup_fetch, 20, "the old ones by age, not the queue")
        yield* sql`UPDATE messages SET status = 'expired' WHERE status = 'queued'`
      }))

    it.effect("finds the channels with due work by the head of each one's queue, not the whole queue", () =>
      Effect.gen(function*() {
        // the sweeper asks every second; as a semi-join the planner read every queued message of
        // every channel for it (196 pages a call at 10k rows, 784 at 1M: bench/RESULTS.md 11g)
        const sql = yield* SqlClient.SqlClient
        const queue = yield* DispatchQueueRepo.DispatchQueueRepo
        const busy = yield* oneChannel
        const quiet = yield* oneChannel
        const idle = yield* oneChannel
        // last analyzed with the queue empty, as after a bulk load: the planner then merged the
        // channels with `messages_queue` from its start, every queued message of every channel
        yield* sql`UPDATE messages SET status = 'expired' WHERE status IN ('queued', 'failed_retryable')`
        yield* sql`ANALYZE messages`
        yield* sql`ANALYZE channels`
        const backlogHead = yield* busy.insert("queued")
        yield* copiesOf(backlogHead.id, "4", "queued", "a deep backlog, all of it due")
        const quietHead = yield* quiet.insert("queued")
        const { read, result: due } = yield* readsDuring(["messages"], queue.channelsWithDueWork(1000))
        const heads = new Map(due.map((c) => [c.channelId, c.head]))
        // each with the first message it would dispatch (the sweeper watches it move)
        assert.strictEqual(heads.get(busy.channelId), backlogHead.id)
        assert.strictEqual(heads.get(quiet.channelId), quietHead.id)
        assert.isFalse(heads.has(idle.channelId), "nothing queued")
        assert.strictEqual(read.seq_scan, 0, "no sequential scan of messages")
        assert.isBelow(read.idx_tup_fetch, 20, "the first due message of each channel, not the 1,502 queued")
        yield* sql`UPDATE messages SET status = 'expired' WHERE status = 'queued'`
      }))

    it.effect("on a month's last day, with the queue's window in two months' partitions, still reads each channel's head, not its queue", () =>
      Effect.gen(function*() {
        // the window (`Partitions.queuedWindow`: a day of slack each side) reaches into next month's
        // partition on a month's last day and first days; with statistics that last saw the queue
        // empty the planner appended the two and sorted a channel's whole queue (1,505 rows read for
        // 2 on 2026-11-30), unless each month is probed on its own (`Partitions.monthSlices`)
        const lastDay = monthsLastDayNoon(Date.now())
        yield* TestClock.setTime(lastDay)
        assert.lengthOf(Partitions.monthSlices("msg", Partitions.queuedWindow(lastDay)), 2)
        const sql = yield* SqlClient.SqlClient
        const queue = yield* DispatchQueueRepo.DispatchQueueRepo
        const busy = yield* oneChannel
        const quiet = yield* oneChannel
        yield* sql`UPDATE messages SET status = 'expired' WHERE status IN ('queued', 'failed_retryable')`
        yield* sql`ANALYZE messages`
        yield* sql`ANALYZE channels`
        const backlogHead = yield* busy.insert("queued")
        yield* copiesOf(backlogHead.id, "6", "queued", "a backlog on the month's last day")
        const quietHead = yield* quiet.insert("queued")

        const gauge = yield* readsDuring(["messages"], queue.backlog())
        assert.deepStrictEqual(
          gauge.result.filter((c) => c.channelId === quiet.channelId || c.channelId === busy.channelId)
            .map((c) => [c.channelId, c.queued]).sort(),
          [[busy.channelId, 1501], [quiet.channelId, 1]].sort()
        )
        assert.isBelow(gauge.read.idx_tup_fetch, 20, "the gauge: the head of each channel's queue")

        const due = yield* readsDuring(["messages"], queue.channelsWithDueWork(1000))
        const heads = new Map(due.result.map((c) => [c.channelId, c.head]))
        assert.strictEqual(heads.get(busy.channelId), backlogHead.id)
        assert.strictEqual(heads.get(quiet.channelId), quietHead.id)
        assert.isBelow(due.read.idx_tup_fetch, 20, "channels with due work: the first due message of each")
        yield* sql`UPDATE messages SET status = 'expired' WHERE status = 'queued'`
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.effect("finds a receipt the sandbox reported and the message missed, without reading the settled deliveries", () =>
      Effect.gen(function*() {
        // the sweep runs every second; driven by the deliveries it read every delivery of the last
        // hour, settled or not (bench/RESULTS.md 11 "What grew")
        const sql = yield* SqlClient.SqlClient
        const network = yield* SandboxNetworkRepo.SandboxNetworkRepo
        const { channelId, insert } = yield* oneChannel
        const stuck = yield* insert("provider_accepted")
        // last analyzed while the 1,500 still awaited their read receipt: the planner believes many
        // messages await one and went to the deliveries first (4,435 pages a call at 1M rows, 11g)
        yield* copiesOf(stuck.id, "5", "delivered", "read long ago")
        // the copies' ids: the stuck message's first 14 characters and "5" (its own 15th character is
        // random, "5" one time in 32: the copies are matched by pattern and the stuck one left out)
        const settled = `${stuck.id.slice(0, 14)}5%`
        yield* sql`UPDATE messages SET updated_at = ${at(-60_000)} WHERE id LIKE ${settled} AND id <> ${stuck.id}`
        yield* sql`INSERT INTO sandbox_deliveries (message_id, channel_id, to_number, offers, accepted_at, sent_at,
            delivered_at, read_at)
          SELECT id, channel_id, to_number, 1, ${at(-61_000)}, ${at(-60_000)}, ${at(-59_000)}, ${at(-58_000)}
          FROM messages WHERE channel_id = ${channelId} AND (id = ${stuck.id} OR id LIKE ${settled})`
        yield* sql`ANALYZE messages`
        yield* sql`ANALYZE sandbox_deliveries`
        yield* sql`UPDATE messages SET status = 'read' WHERE id LIKE ${settled} AND id <> ${stuck.id}`
        yield* sql`VACUUM messages`
        const { read, result: missed } = yield* readsDuring(
          ["messages", "sandbox_deliveries"],
          network.missedReceipts(at(-10_000), at(-3_600_000), 100)
        )
        assert.deepStrictEqual(missed.map((r) => [r.messageId, r.stage]), [
          [stuck.id, "sent"],
          [stuck.id, "delivered"],
          [stuck.id, "read"]
        ])
        assert.strictEqual(read.seq_scan, 0, "no sequential scan")
        // what earlier tests of this file left awaiting a receipt, and their deliveries: a few dozen
        assert.isBelow(read.idx_tup_fetch, 150, "the messages awaiting a receipt, not the 1,500 settled deliveries")
        yield* sql`DELETE FROM sandbox_deliveries WHERE channel_id = ${channelId}`
      }))
  })
})
