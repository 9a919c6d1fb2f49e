/**
 * Messages and their timeline in monthly partitions by id (docs/OPERATING.md "Partitions and
 * retention"): the send, the dispatch take and its guard, receipts, finds and lists read only the
 * partitions they need (EXPLAIN ANALYZE of the statements the repos run, as sent and on their
 * generic plans), and so do marking a conversation read, a file's messages settling and an
 * archived channel's queue; marking read still finds the messages a LID merge moved in and a group
 * chat's; an inbound message heard twice is recorded once whichever months the two hearings fall in; retention drops whole partitions and reads stay right; an existing
 * installation's messages move into the first partition.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import {
  ConversationsRepo,
  DispatchQueueRepo,
  LidRepo,
  MediaRepo,
  MessageQuotaRepo,
  MessagesRepo,
  Migrations,
  Partitions,
  PartitionsRepo,
  QrSafetyRepo,
  QrWarmUpRepo,
  SandboxNetworkRepo,
  SendWritesRepo,
  UsageRepo
} from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { type Contacts, Ids, MessageCategory, type MessageStateMachine, Messaging, Schemas } from "@switchboard/domain"
import { Deferred, Effect, Exit, Fiber, Layer, Option, TestClock, TestServices } from "effect"
import { randomBytes } from "node:crypto"
import * as PlanReads from "./PlanReads.js"
import { UnmigratedLayer } from "./Unmigrated.js"

const DAY = 24 * 3600 * 1000

const TestLayer = Layer.mergeAll(
  MessagesRepo.MessagesRepo.Default,
  DispatchQueueRepo.DispatchQueueRepo.Default,
  SendWritesRepo.SendWritesRepo.Default,
  QrSafetyRepo.QrSafetyRepo.Default,
  PartitionsRepo.PartitionsRepo.Default,
  LidRepo.LidRepo.Default,
  MessageQuotaRepo.MessageQuotaRepo.Default,
  QrWarmUpRepo.QrWarmUpRepo.Default,
  SandboxNetworkRepo.SandboxNetworkRepo.Default,
  UsageRepo.UsageRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  MediaRepo.MediaRepo.Default
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const HISTORY = /^(messages|message_transitions)_/

const partitionsRead = <A, E, R>(effect: Effect.Effect<A, E, R>) => PlanReads.partitionsRead(effect, HISTORY)

/**
 * An id of `prefix` made at `at` (epoch ms). Not `Ids.newId`: its ids never go back in time, so a
 * test clock set ahead would move the ids of every later test in this worker ahead too.
 */
const idAt = <P extends Ids.IdPrefix>(prefix: P, at: number) =>
  `${Ids.idFloor(prefix, at)}${
    randomBytes(16).toString("hex").toUpperCase().replace(/[ILOU]/g, "0").slice(0, 16)
  }` as `${P}_${string}`

/** A workspace with a connected sandbox channel and one conversation (made at `at`). */
const conversation = (at: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const time = Schemas.toTimestamp(at)
    const workspaceId = idAt("ws", at)
    const channelId = idAt("ch", at)
    const contactId = idAt("cnt", at)
    const conversationId = idAt("cnv", at)
    yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${time}, ${time})`
    yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, phone_number, created_at, updated_at)
      VALUES (${channelId}, ${workspaceId}, 'c', 'sandbox', 'connected', '+15550100001', ${time}, ${time})`
    yield* sql`INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at)
      VALUES (${contactId}, ${workspaceId}, '+4915112345678', ${time}, ${time})`
    yield* sql`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, created_at, updated_at)
      VALUES (${conversationId}, ${workspaceId}, ${channelId}, ${contactId}, 'open', ${time}, ${time})`
    return { workspaceId, channelId, contactId, conversationId }
  }).pipe(Effect.orDie)

type Conversation = Effect.Effect.Success<ReturnType<typeof conversation>>

/** A message of `c` made at `at` (its id of that time), outbound unless it has a provider id. */
const message = (
  c: Conversation,
  at: number,
  status: MessageStateMachine.MessageStatus,
  providerMessageId?: string
) =>
  Effect.flatMap(MessagesRepo.MessagesRepo, (repo) =>
    repo.insert({
      id: idAt("msg", at),
      workspaceId: c.workspaceId,
      channelId: c.channelId,
      conversationId: c.conversationId,
      contactId: c.contactId,
      direction: providerMessageId === undefined ? "outbound" : "inbound",
      from: providerMessageId === undefined ? null : "+4915112345678",
      to: providerMessageId === undefined ? "+4915112345678" : "+15550100001",
      body: "hi",
      category: "utility",
      priority: MessageCategory.PRIORITY.utility,
      status,
      metadata: {},
      now: Schemas.toTimestamp(at),
      providerMessageId
    }))

/** The partitions of `table` whose bounds overlap ids made in `[from, to)`. */
const overlapping = (partitions: ReadonlyArray<Partitions.Partition>, from: number, to: number) =>
  partitions.filter((p) => (p.from === null || p.from < Ids.idFloor("msg", to)) && p.to > Ids.idFloor("msg", from))
    .map((p) => p.name)

const at24hAgo = (t: number) => Schemas.toTimestamp(t - DAY)

const timelinesOf = (names: ReadonlyArray<string>) => names.map((n) => n.replace("messages", "message_transitions"))

/** The sweeper's horizon once a sweep of every month settled what was older (`MessageSweeper.SWEEP_HORIZON_MS`). */
const WEEK = 7 * DAY

/** Each statement of each check read only its allowed partitions, as sent and on its generic plan. */
const assertReadOnly = (checks: ReadonlyArray<[string, ReadonlyArray<PlanReads.Read>, ReadonlyArray<string>]>) => {
  for (const [name, reads, allowed] of checks) {
    assert.isAbove(reads.length, 0, name)
    for (const read of reads) {
      const extra = read.partitions.filter((p) => !allowed.includes(p))
      assert.deepStrictEqual(extra, [], `${name}: ${read.statement}`)
    }
  }
}

describe("Message partitions", () => {
  layer(TestLayer, { timeout: 120_000 })((it) => {
    it.effect("the send, the dispatch take, receipts, finds and lists read only the partitions they need", () =>
      Effect.gen(function*() {
        const repo = yield* MessagesRepo.MessagesRepo
        const queue = yield* DispatchQueueRepo.DispatchQueueRepo
        const writes = yield* SendWritesRepo.SendWritesRepo
        const first = (yield* Partitions.partitions("messages"))[0]!
        // the test clock 45 days into the second month after the first partition: a month behind
        // it, and (made below) months ahead
        const t = Partitions.addMonths(Ids.idTime(first.to)!, 1) + 45 * DAY
        yield* TestClock.setTime(t)
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(t + 60 * DAY)
        const all = yield* Partitions.partitions("messages")
        const current = overlapping(all, t - 2 * DAY, t + 1)
        assert.deepStrictEqual(current, [Partitions.partitionName("messages", Partitions.monthStart(t))])
        const kept = overlapping(all, t - 30 * DAY, t + Partitions.CLOCK_SLACK_MS)
        assert.strictEqual(kept.length, 2)
        assert.isAbove(all.length, kept.length + 2)

        const c = yield* conversation(t - 50 * DAY)
        const old = yield* message(c, t - 40 * DAY, "read")
        const inbound = yield* message(c, t - 2 * 3600_000, "delivered", "wamid.partitions")
        const a = yield* message(c, t - 3600_000, "queued")
        const b = yield* message(c, t - 1800_000, "queued")
        const at = Schemas.toTimestamp(t)

        const checks: Array<[string, ReadonlyArray<PlanReads.Read>, ReadonlyArray<string>]> = []
        const sent = new Messaging.Message({
          ...(yield* repo.findById(a.id)).pipe(Option.getOrThrow),
          id: idAt("msg", t),
          created_at: at,
          updated_at: at
        })
        const send = yield* partitionsRead(
          writes.write({
            message: sent,
            priority: MessageCategory.PRIORITY.utility,
            contactsLimit: null,
            claim: undefined
          })
        )
        assert.strictEqual(send.result._tag, "Written")
        checks.push(["send", send.reads, []])
        const next = yield* partitionsRead(queue.nextQueued(c.channelId, 10))
        assert.deepStrictEqual(next.result.map((m) => m.id), [a.id, b.id, sent.id])
        checks.push(["nextQueued", next.reads, current])
        const due = yield* partitionsRead(queue.channelsWithDueWork(1000))
        assert.include(due.result.map((r) => r.channelId), c.channelId)
        checks.push(["channelsWithDueWork", due.reads, current])
        const took = yield* partitionsRead(repo.takeForDispatch([{ id: a.id, at, waiting: [], lease: undefined }]))
        assert.deepStrictEqual(took.result.map((m) => m.id), [a.id])
        checks.push(["takeForDispatch", took.reads, [...current, ...timelinesOf(current)]])
        const moved = yield* partitionsRead(repo.transition(b.id, "dispatching"))
        assert.isTrue(Option.isSome(moved.result))
        checks.push(["transition", moved.reads, [...current, ...timelinesOf(current)]])
        const since = yield* partitionsRead(queue.dispatchesSince(c.channelId, t - 3600_000))
        assert.strictEqual(since.result.length, 2)
        checks.push(["dispatchesSince", since.reads, [...current, ...timelinesOf(current)]])
        const receipts = yield* partitionsRead(repo.receipts([
          { id: a.id, to: "provider_accepted", at },
          { id: b.id, to: "sent", at }
        ]))
        assert.strictEqual(receipts.result.length, 2)
        checks.push(["receipts", receipts.reads, [...current, ...timelinesOf(current)]])
        const found = yield* partitionsRead(repo.find(c.workspaceId, old.id))
        assert.deepStrictEqual(Option.getOrThrow(found.result).timeline.map((s) => s.to_state), ["read"])
        const oldMonth = overlapping(all, t - 40 * DAY, t - 40 * DAY + 1)
        checks.push(["find", found.reads, [...oldMonth, ...timelinesOf(oldMonth)]])
        const listed = yield* partitionsRead(
          repo.list(c.workspaceId, { ids: PartitionsRepo.keptIds("msg", 30, t) }, 10, undefined)
        )
        assert.deepStrictEqual(listed.result.map((m) => m.id), [sent.id, b.id, a.id, inbound.id])
        checks.push(["list", listed.reads, kept])
        const byProvider = yield* partitionsRead(repo.idForProviderMessage(c.channelId, "wamid.partitions"))
        assert.strictEqual(byProvider.result, inbound.id)
        checks.push(["idForProviderMessage (theirs)", byProvider.reads, current])
        const ours = yield* partitionsRead(repo.idForProviderMessage(c.channelId, a.id))
        assert.strictEqual(ours.result, a.id)
        checks.push(["idForProviderMessage (ours)", ours.reads, current])
        // a QR send's count of what the channel handed to WhatsApp in the last day
        const usage = yield* partitionsRead((yield* QrSafetyRepo.QrSafetyRepo).usage(c.channelId, at24hAgo(t)))
        assert.deepStrictEqual([usage.result.sentAt.length, usage.result.queued], [2, 1])
        checks.push(["QrSafetyRepo.usage", usage.reads, current])
        const heard = yield* partitionsRead(repo.hasProviderMessage(c.channelId, "wamid.partitions"))
        assert.isTrue(heard.result)
        checks.push(["hasProviderMessage", heard.reads, []])

        assertReadOnly(checks)
        // the take and the list did read their partitions (the check is not vacuous)
        assert.includeMembers(took.reads.flatMap((r) => r.partitions), current)
        assert.includeMembers(listed.reads.flatMap((r) => r.partitions), kept)
      }))

    it.effect("the sweeps, the QR health page, the counts and the LID merge read only the months they need", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const queue = yield* DispatchQueueRepo.DispatchQueueRepo
        const first = (yield* Partitions.partitions("messages"))[0]!
        // as in the first test: 45 days into the second month after the first partition, rows in
        // four months (the first partition, the month before, this one; made below)
        const t = Partitions.addMonths(Ids.idTime(first.to)!, 1) + 45 * DAY
        yield* TestClock.setTime(t)
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(t + 60 * DAY)
        const all = yield* Partitions.partitions("messages")
        const at = (ms: number) => Schemas.toTimestamp(ms)
        // no statement here reads before its window; those with no upper bound may read the
        // (empty) months ahead
        const upTo = t + 400 * DAY
        const c = yield* conversation(t - 80 * DAY)
        yield* message(c, t - 75 * DAY, "read")
        // queued 40 days ago and never expired (no sweeper ran): only a sweep of every month sees it
        const ancient = yield* message(c, t - 40 * DAY, "queued")
        const stale = yield* message(c, t - 2 * DAY, "queued")
        yield* message(c, t - 3 * 3600_000, "provider_accepted")
        yield* message(c, t - 3600_000, "dispatching")
        yield* message(c, t - 1800_000, "sent")
        assert.isAtLeast(new Set(overlapping(all, t - 75 * DAY, t)).size, 3)

        const checks: Array<[string, ReadonlyArray<PlanReads.Read>, ReadonlyArray<string>]> = []
        // the sweeps once a sweep of every month settled what was older than the week
        const horizon = overlapping(all, t - WEEK - DAY, upTo)
        const expired = yield* partitionsRead(queue.staleQueued(at(t - DAY), 500, t - WEEK))
        assert.include(expired.result, stale.id)
        assert.notInclude(expired.result, ancient.id)
        checks.push(["staleQueued", expired.reads, horizon])
        const everyMonth = yield* queue.staleQueued(at(t - DAY), 500)
        assert.includeMembers(everyMonth, [stale.id, ancient.id])
        checks.push([
          "stuckDispatching",
          (yield* partitionsRead(queue.stuckDispatching(at(t), 10, t - WEEK))).reads,
          horizon
        ])
        checks.push([
          "unacknowledged",
          (yield* partitionsRead(queue.unacknowledged(at(t), 10, t - WEEK))).reads,
          horizon
        ])
        checks.push([
          "undispatchedOfArchived",
          (yield* partitionsRead(queue.undispatchedOfArchived(10, t - WEEK))).reads,
          horizon
        ])
        const awaiting = yield* partitionsRead(queue.channelsAwaitingReceipts({
          overdueBefore: at(t + 60_000),
          acceptedAfter: at(t - 3600_000 * 4),
          laterStagesAfter: at(t - 3600_000),
          limit: 500,
          madeSince: t - WEEK
        }))
        assert.include(awaiting.result, c.channelId)
        checks.push(["channelsAwaitingReceipts", awaiting.reads, horizon])
        // the missed-receipts sweep: what the network sent in the last hour
        const missed = yield* partitionsRead(
          (yield* SandboxNetworkRepo.SandboxNetworkRepo).missedReceipts(at(t), at(t - 3600_000), 10)
        )
        checks.push(["missedReceipts", missed.reads, overlapping(all, t - 3 * DAY, upTo)])
        // GET .../qr/safety: the last 24 hours
        const health = yield* partitionsRead((yield* QrSafetyRepo.QrSafetyRepo).health(c.channelId, at(t - DAY), at(t)))
        // handed over: the accepted one; not sent yet: the queued one of two days ago and the dispatching one
        const shown = Option.getOrThrow(health.result)
        assert.deepStrictEqual([shown.sent, shown.queued], [1, 2])
        checks.push(["QrSafetyRepo.health", health.reads, overlapping(all, t - 9 * DAY, upTo)])
        const warm = yield* partitionsRead((yield* QrWarmUpRepo.QrWarmUpRepo).newContactSends(c.channelId, at(t - DAY)))
        checks.push(["newContactSends", warm.reads, overlapping(all, t - 3 * DAY, upTo)])
        // the monthly quota and GET /v1/usage: this month's messages
        const month = Partitions.monthStart(t)
        const quota = yield* partitionsRead(
          (yield* MessageQuotaRepo.MessageQuotaRepo).acceptedSince(c.workspaceId, at(month))
        )
        checks.push(["acceptedSince", quota.reads, overlapping(all, month - 2 * DAY, upTo)])
        const usage = yield* partitionsRead(
          (yield* UsageRepo.UsageRepo).counts(c.workspaceId, at(month), at(Partitions.addMonths(month, 1)), at(t))
        )
        assert.strictEqual(usage.result.sandbox_messages, 4)
        checks.push([
          "UsageRepo.counts",
          usage.reads,
          overlapping(all, month - 3 * DAY, Partitions.addMonths(month, 1) + 2 * DAY)
        ])

        // the LID merge: a contact known by its LID for five days folds into the number's contact
        const lids = yield* LidRepo.LidRepo
        const lidContact = (made: number, lid: string) =>
          Effect.gen(function*() {
            const id = idAt("cnt", made)
            yield* sql`INSERT INTO contacts (id, workspace_id, whatsapp_lid, created_at, updated_at)
              VALUES (${id}, ${c.workspaceId}, ${lid}, ${at(made)}, ${at(made)})`
            const conversationId = idAt("cnv", made)
            yield* sql`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, created_at, updated_at)
              VALUES (${conversationId}, ${c.workspaceId}, ${c.channelId}, ${id}, 'open', ${at(made)}, ${at(made)})`
            const said = yield* message(
              { ...c, contactId: id, conversationId },
              made + DAY,
              "delivered",
              `wamid.${lid}`
            )
            return { id, said }
          })
        const from = yield* lidContact(t - 5 * DAY, "111111111111111")
        const merged = yield* partitionsRead(lids.merge({
          from: from.id as Contacts.Contact["id"],
          into: c.contactId as Contacts.Contact["id"],
          phone: "+4915112345678",
          lid: "111111111111111",
          now: at(t)
        }))
        const [moved] = yield* sql<{ contact_id: string; conversation_id: string }>`SELECT contact_id, conversation_id
          FROM messages WHERE id = ${from.said.id}`
        assert.deepStrictEqual([moved!.contact_id, moved!.conversation_id], [c.contactId, c.conversationId])
        checks.push(["LidRepo.merge", merged.reads, overlapping(all, t - 7 * DAY, upTo)])
        const other = yield* lidContact(t - 3 * DAY, "222222222222222")
        // heard from the LID alone: no number on the message yet
        yield* sql`UPDATE messages SET from_number = NULL WHERE id = ${other.said.id}`
        const phoned = yield* partitionsRead(lids.setPhone(other.id, "+4915100000002", at(t)))
        const [numbered] = yield* sql<{ from_number: string | null }>`SELECT from_number FROM messages
          WHERE id = ${other.said.id}`
        assert.strictEqual(numbered!.from_number, "+4915100000002")
        checks.push(["LidRepo.setPhone", phoned.reads, overlapping(all, t - 5 * DAY, upTo)])

        assertReadOnly(checks)
        // the sweeps did read the horizon's partition (the check is not vacuous)
        assert.includeMembers(expired.reads.flatMap((r) => r.partitions), overlapping(all, t - 2 * DAY, t))
      }))

    it.effect("marking read, a file's messages and an archived channel's queue read only the months they need", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* MessagesRepo.MessagesRepo
        const queue = yield* DispatchQueueRepo.DispatchQueueRepo
        const media = yield* MediaRepo.MediaRepo
        const first = (yield* Partitions.partitions("messages"))[0]!
        // as in the tests above: 45 days into the second month after the first partition, rows in
        // four months (the first partition, the month before, this one; made below)
        const t = Partitions.addMonths(Ids.idTime(first.to)!, 1) + 45 * DAY
        yield* TestClock.setTime(t)
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(t + 60 * DAY)
        const all = yield* Partitions.partitions("messages")
        const at = (ms: number) => Schemas.toTimestamp(ms)
        // no statement here has an upper bound: the (empty) months ahead may be read
        const since = (from: number) => overlapping(all, from, t + 400 * DAY)
        const monthOf = (ms: number) => overlapping(all, ms, ms + 1)
        const sorted = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((r) => r.id).sort()
        const c = yield* conversation(t - 80 * DAY)
        const checks: Array<[string, ReadonlyArray<PlanReads.Read>, ReadonlyArray<string>]> = []

        // marking read: unread inbound messages of three months, read up to the second one; then
        // the rest, from the month of the one left unread
        const u75 = yield* message(c, t - 75 * DAY, "delivered", "wamid.u75")
        const u40 = yield* message(c, t - 40 * DAY, "delivered", "wamid.u40")
        yield* message(c, t - 10 * DAY, "read")
        const u1 = yield* message(c, t - 3600_000, "delivered", "wamid.u1")
        assert.isAtLeast(new Set(overlapping(all, t - 75 * DAY, t)).size, 3)
        const mark = (upTo: string | null) =>
          repo.markInboundRead({ conversationId: c.conversationId, upTo, now: at(t) })
        assert.deepStrictEqual(sorted(yield* mark(u40.created_at)), [u75.id, u40.id].sort())
        const rest = yield* partitionsRead(mark(null))
        assert.deepStrictEqual(sorted(rest.result), [u1.id])
        checks.push(["markInboundRead", rest.reads, since(t - 3600_000)])
        // nothing unread: no message is read at all
        const again = yield* partitionsRead(mark(null))
        assert.deepStrictEqual(again.result, [])
        checks.push(["markInboundRead (all read)", again.reads, []])

        // a file whose message's content arrived late: the message 40 days old (its content,
        // a view-once photo, heard ten days ago with a new file), and a send of that file since
        const late = yield* repo.insert({
          id: idAt("msg", t - 40 * DAY + 1000),
          workspaceId: c.workspaceId,
          channelId: c.channelId,
          conversationId: c.conversationId,
          contactId: c.contactId,
          direction: "inbound",
          from: "+4915112345678",
          to: "+15550100001",
          body: "",
          category: "utility",
          priority: MessageCategory.PRIORITY.utility,
          status: "delivered",
          metadata: {},
          now: at(t - 40 * DAY + 1000),
          providerMessageId: "wamid.late",
          type: "unsupported",
          content: { kind: "view_once" }
        })
        const file = idAt("med", t - 10 * DAY)
        const completed = yield* repo.completeAwaiting({
          channelId: c.channelId,
          providerMessageId: "wamid.late",
          type: "image",
          body: "",
          content: { media_id: file, mime_type: "image/jpeg", size_bytes: null, sha256: null, caption: null },
          replyTo: null,
          mediaId: file,
          now: at(t - 10 * DAY)
        })
        assert.strictEqual(Option.getOrThrow(completed).id, late.id)
        yield* media.createInbound({
          id: file,
          workspaceId: c.workspaceId,
          channelId: c.channelId,
          messageId: late.id,
          kind: "image",
          mimeType: "image/jpeg",
          filename: null,
          expectedSize: null,
          expectedSha256: null,
          source: null,
          now: at(t - 10 * DAY),
          expiresAt: at(t + 20 * DAY)
        })
        // the message's month, and the months since the file was made (a day of clock slack)
        const fileMonths = [...monthOf(t - 40 * DAY), ...since(t - 12 * DAY)]
        const ready = yield* partitionsRead(repo.mediaSettled({
          mediaId: file,
          messageId: late.id,
          status: "ready",
          failure: null,
          sizeBytes: 1234,
          sha256: "ab".repeat(32),
          now: at(t - 10 * DAY)
        }))
        assert.deepStrictEqual(sorted(ready.result), [late.id])
        assert.deepInclude(ready.result[0]!.image, { size_bytes: 1234, sha256: "ab".repeat(32) })
        checks.push(["mediaSettled (ready)", ready.reads, fileMonths])
        const forwarded = yield* message(c, t - 2 * DAY, "read")
        yield* sql`UPDATE messages SET media_id = ${file}, media_status = 'ready' WHERE id = ${forwarded.id}`
        const expired = yield* partitionsRead(repo.mediaSettled({
          mediaId: file,
          messageId: late.id,
          status: "expired",
          failure: null,
          sizeBytes: null,
          sha256: null,
          now: at(t)
        }))
        assert.deepStrictEqual(sorted(expired.result), [late.id, forwarded.id].sort())
        assert.isTrue(expired.result.every((m) => m.media?.status === "expired"))
        checks.push(["mediaSettled (expired)", expired.reads, fileMonths])
        // an upload (no message of its own), sent twice since
        const upload = idAt("med", t - 5 * DAY)
        yield* media.createUpload({
          id: upload,
          workspaceId: c.workspaceId,
          kind: "image",
          mimeType: "image/jpeg",
          filename: null,
          now: at(t - 5 * DAY),
          expiresAt: at(t)
        })
        const sends = [yield* message(c, t - 4 * DAY, "read"), yield* message(c, t - 3600_000, "read")]
        yield* sql`UPDATE messages SET media_id = ${upload}, media_status = 'ready'
          WHERE id IN (${sends[0]!.id}, ${sends[1]!.id})`
        const gone = yield* partitionsRead(repo.mediaSettled({
          mediaId: upload,
          messageId: null,
          status: "expired",
          failure: null,
          sizeBytes: null,
          sha256: null,
          now: at(t)
        }))
        assert.deepStrictEqual(sorted(gone.result), sends.map((m) => m.id).sort())
        checks.push(["mediaSettled (an upload)", gone.reads, since(t - 7 * DAY)])

        // an archived channel's queue: what the dispatcher could still take, the last two days'
        const ancient = yield* message(c, t - 40 * DAY, "queued")
        const yesterday = yield* message(c, t - 30 * 3600_000, "queued")
        const recent = yield* message(c, t - 3600_000, "queued")
        const undispatched = yield* partitionsRead(queue.undispatchedOf(c.channelId))
        assert.deepStrictEqual([...undispatched.result].sort(), [yesterday.id, recent.id].sort())
        checks.push(["undispatchedOf", undispatched.reads, overlapping(all, t - 3 * DAY, t + 2 * DAY)])
        // the one queued 40 days ago (no sweeper ran to expire it) is never dispatched; the
        // sweeper's first sweep, which reads every month, cancels it with the channel archived
        yield* sql`UPDATE channels SET status = 'archived', archived_at = ${at(t)} WHERE id = ${c.channelId}`
        assert.include(yield* queue.undispatchedOfArchived(500), ancient.id)

        assertReadOnly(checks)
        // the reads did read their months (the check is not vacuous)
        assert.includeMembers(rest.reads.flatMap((r) => r.partitions), monthOf(t - 3600_000))
        assert.includeMembers(expired.reads.flatMap((r) => r.partitions), monthOf(t - 40 * DAY))
        assert.includeMembers(undispatched.reads.flatMap((r) => r.partitions), monthOf(t))
      }))

    it.effect("marking read finds what a LID merge moved in, a group chat's messages, and late ones", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* MessagesRepo.MessagesRepo
        const lids = yield* LidRepo.LidRepo
        const first = (yield* Partitions.partitions("messages"))[0]!
        const t = Partitions.addMonths(Ids.idTime(first.to)!, 1) + 45 * DAY
        yield* TestClock.setTime(t)
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(t + 60 * DAY)
        const at = (ms: number) => Schemas.toTimestamp(ms)
        const sorted = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((r) => r.id).sort()
        const c = yield* conversation(t - 80 * DAY)
        const mark = (conversationId: string, upTo: string | null = null) =>
          repo.markInboundRead({ conversationId, upTo, now: at(t) })
        // the number's conversation, read: nothing unread
        yield* message(c, t - 3 * DAY, "delivered", "wamid.phone")
        assert.strictEqual((yield* mark(c.conversationId)).length, 1)
        assert.deepStrictEqual(yield* mark(c.conversationId), [])

        // a contact known by its LID alone for 50 days, with a conversation on the same channel
        // (unread messages of 45 days and 2 days ago) and one on another channel (unread, 40 days)
        const time = at(t - 50 * DAY)
        const lidContact = idAt("cnt", t - 50 * DAY)
        yield* sql`INSERT INTO contacts (id, workspace_id, whatsapp_lid, created_at, updated_at)
          VALUES (${lidContact}, ${c.workspaceId}, '333333333333333', ${time}, ${time})`
        const lidConversation = idAt("cnv", t - 50 * DAY)
        yield* sql`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, created_at, updated_at)
          VALUES (${lidConversation}, ${c.workspaceId}, ${c.channelId}, ${lidContact}, 'open', ${time}, ${time})`
        const otherChannel = idAt("ch", t - 50 * DAY)
        yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, phone_number, created_at, updated_at)
          VALUES (${otherChannel}, ${c.workspaceId}, 'c2', 'sandbox', 'connected', '+15550100002', ${time}, ${time})`
        const elsewhere = idAt("cnv", t - 50 * DAY)
        yield* sql`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, created_at, updated_at)
          VALUES (${elsewhere}, ${c.workspaceId}, ${otherChannel}, ${lidContact}, 'open', ${time}, ${time})`
        const lid = { ...c, contactId: lidContact, conversationId: lidConversation }
        const l45 = yield* message(lid, t - 45 * DAY, "delivered", "wamid.l45")
        const l2 = yield* message(lid, t - 2 * DAY, "delivered", "wamid.l2")
        const l40 = yield* message(
          { ...lid, channelId: otherChannel, conversationId: elsewhere },
          t - 40 * DAY,
          "delivered",
          "wamid.l40"
        )
        yield* lids.merge({
          from: lidContact as Contacts.Contact["id"],
          into: c.contactId as Contacts.Contact["id"],
          phone: "+4915112345678",
          lid: "333333333333333",
          now: at(t)
        })
        // folded into the number's conversation: its unread messages, older than what was read there
        assert.deepStrictEqual(sorted(yield* mark(c.conversationId)), [l45.id, l2.id].sort())
        // moved whole to the number's contact: its own unread message
        assert.deepStrictEqual(sorted(yield* mark(elsewhere)), [l40.id])

        // a group chat's conversation: participants' messages, one of them late by WhatsApp's clock
        // (heard an hour ago, written 50 days ago: listed among the old ones)
        const group = idAt("gch", t - 30 * DAY)
        yield* sql`INSERT INTO group_chats (id, workspace_id, channel_id, whatsapp_group_id, subject, created_at,
            updated_at) VALUES (${group}, ${c.workspaceId}, ${c.channelId}, '120363000000000001@g.us', 'g',
            ${at(t - 30 * DAY)}, ${at(t - 30 * DAY)})`
        const groupConversation = idAt("cnv", t - 30 * DAY)
        yield* sql`INSERT INTO conversations (id, workspace_id, channel_id, group_chat_id, status, created_at, updated_at)
          VALUES (${groupConversation}, ${c.workspaceId}, ${c.channelId}, ${group}, 'open', ${at(t - 30 * DAY)},
            ${at(t - 30 * DAY)})`
        const said = (made: number, written: number, providerId: string) =>
          repo.insert({
            id: idAt("msg", made),
            workspaceId: c.workspaceId,
            channelId: c.channelId,
            conversationId: groupConversation,
            contactId: c.contactId,
            direction: "inbound",
            from: "+4915112345678",
            to: "+15550100001",
            body: "hi",
            category: "utility",
            priority: MessageCategory.PRIORITY.utility,
            status: "delivered",
            metadata: {},
            now: at(written),
            providerMessageId: providerId,
            groupChatId: group
          })
        const g20 = yield* said(t - 20 * DAY, t - 20 * DAY, "wamid.g20")
        const g1 = yield* said(t - 3600_000, t - 3600_000, "wamid.g1")
        const gLate = yield* said(t - 3600_000 + 1, t - 50 * DAY, "wamid.glate")
        // read up to 10 days ago: the late one and the one of 20 days ago, with the group's id
        const early = yield* mark(groupConversation, at(t - 10 * DAY))
        assert.deepStrictEqual(sorted(early), [g20.id, gLate.id].sort())
        assert.isTrue(early.every((m) => m.whatsapp_group_id === "120363000000000001@g.us"))
        // then the rest: the one of an hour ago, once
        assert.deepStrictEqual(sorted(yield* mark(groupConversation)), [g1.id])
        assert.deepStrictEqual(yield* mark(groupConversation), [])
      }))

    // two connections at once: real Postgres only (the embedded one has one)
    it.effect.skipIf(TestDatabase.testDatabaseUrl() === undefined)(
      "an inbound message written while its conversation is being read is found by the next read",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const repo = yield* MessagesRepo.MessagesRepo
          const t = Date.now()
          const c = yield* conversation(t - DAY)
          const read = () =>
            repo.markInboundRead({ conversationId: c.conversationId, upTo: null, now: Schemas.toTimestamp(t) })
          const earlier = yield* message(c, t - 3600_000, "delivered", "wamid.during1")
          // written on another connection (forked outside the read's transaction) once the read has
          // marked what it sees, before the read commits
          const go = yield* Deferred.make<void>()
          const writer = yield* Deferred.await(go).pipe(
            Effect.zipRight(message(c, t, "delivered", "wamid.during2")),
            Effect.fork
          )
          const marked = yield* sql.withTransaction(Effect.gen(function*() {
            const marked = yield* read()
            yield* Deferred.succeed(go, undefined)
            // until the writer waits for the conversation's row (or, were it not locked, is done)
            while (Option.isNone(yield* Fiber.poll(writer))) {
              // (a transaction sees one snapshot of pg_stat_activity unless it is cleared)
              yield* sql`SELECT pg_stat_clear_snapshot()`
              const [waiting] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'`
              if (waiting!.n > 0) break
              yield* TestServices.provideLive(Effect.sleep("10 millis"))
            }
            return marked
          }))
          const during = yield* Fiber.join(writer)
          assert.deepStrictEqual(marked.map((m) => m.id), [earlier.id])
          assert.deepStrictEqual((yield* read()).map((m) => m.id), [during.id])
        })
    )

    it.effect("a list's page reads the last month's partitions when they fill it, every month otherwise, in order", () =>
      Effect.gen(function*() {
        const repo = yield* MessagesRepo.MessagesRepo
        const first = (yield* Partitions.partitions("messages"))[0]!
        const t = Partitions.addMonths(Ids.idTime(first.to)!, 1) + 45 * DAY
        yield* TestClock.setTime(t)
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(t + 60 * DAY)
        const all = yield* Partitions.partitions("messages")
        const c = yield* conversation(t - 80 * DAY)
        const [o70, o40, o10, r1, r2, r3] = yield* Effect.forEach(
          [70 * DAY, 40 * DAY, 10 * DAY, 3 * 3600_000, 2 * 3600_000, 3600_000],
          (ago) => message(c, t - ago, "read")
        )
        // heard an hour ago (its id of then) but written 50 days ago by WhatsApp's clock (a phone
        // offline that long): it is listed at its `created_at`, among the older months' messages
        const late = yield* repo.insert({
          id: idAt("msg", t - 3600_000 + 1),
          workspaceId: c.workspaceId,
          channelId: c.channelId,
          conversationId: c.conversationId,
          contactId: c.contactId,
          direction: "inbound",
          from: "+4915112345678",
          to: "+15550100001",
          body: "late",
          category: "utility",
          priority: MessageCategory.PRIORITY.utility,
          status: "delivered",
          metadata: {},
          now: Schemas.toTimestamp(t - 50 * DAY),
          providerMessageId: "wamid.late"
        })
        const expected = [r3!, r2!, r1!, o10!, o40!, late, o70!].map((m) => m.id)

        // the first page: the last month and a day hold it
        const firstPage = yield* partitionsRead(repo.list(c.workspaceId, {}, 2, undefined))
        assert.deepStrictEqual(firstPage.result.map((m) => m.id), expected.slice(0, 3))
        // (and the empty months ahead: the try has no upper bound)
        assertReadOnly([["list (first page)", firstPage.reads, overlapping(all, t - 33 * DAY, t + 400 * DAY)]])
        // every page, two at a time, in order: a page the recent months cannot settle (the late
        // message might be followed by an older month's) is read from every month
        const listed: Array<string> = []
        let after: { created_at: string; id: string } | undefined = undefined
        while (true) {
          const rows: ReadonlyArray<Messaging.Message> = yield* repo.list(c.workspaceId, {}, 2, after)
          listed.push(...rows.slice(0, 2).map((m) => m.id))
          if (rows.length <= 2) break
          after = { created_at: rows[1]!.created_at, id: rows[1]!.id }
        }
        assert.deepStrictEqual(listed, expected)
        const second = yield* partitionsRead(
          repo.list(c.workspaceId, {}, 2, { created_at: r2!.created_at, id: r2!.id })
        )
        assert.deepStrictEqual(second.result.map((m) => m.id), [r1!.id, o10!.id, o40!.id])
        assert.include(second.reads.flatMap((r) => r.partitions), overlapping(all, t - 70 * DAY, t - 70 * DAY + 1)[0])

        // the inbox: the newest message and the unread count; read an hour ago, the recent months
        // settle both
        const conversations = yield* ConversationsRepo.ConversationsRepo
        const sql = yield* SqlClient.SqlClient
        const read = yield* partitionsRead(Effect.gen(function*() {
          yield* sql`UPDATE conversations SET last_read_at = ${Schemas.toTimestamp(t - 2 * 3600_000)}
            WHERE id = ${c.conversationId}`
          return Option.getOrThrow(yield* conversations.find(c.workspaceId, c.conversationId))
        }))
        assert.deepStrictEqual([read.result.last_message?.id, read.result.unread_count], [r3!.id, 0])
        assertReadOnly([["conversation (read lately)", read.reads, overlapping(all, t - 33 * DAY, t + 400 * DAY)]])
        // never read: its inbound messages of every month count (the late one)
        const unread = yield* partitionsRead(Effect.gen(function*() {
          yield* sql`UPDATE conversations SET last_read_at = NULL WHERE id = ${c.conversationId}`
          return Option.getOrThrow(yield* conversations.find(c.workspaceId, c.conversationId))
        }))
        assert.deepStrictEqual([unread.result.last_message?.id, unread.result.unread_count], [r3!.id, 1])
        assert.include(unread.reads.flatMap((r) => r.partitions), overlapping(all, t - 70 * DAY, t - 70 * DAY + 1)[0])
      }))

    it.effect("an inbound message's time is at most a day after its id's (the lists' recent months rely on it)", () =>
      Effect.gen(function*() {
        const t = Date.UTC(2027, 0, 15, 12)
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(t)
        const c = yield* conversation(t - DAY)
        // WhatsApp's clock three days ahead of ours
        const ahead = yield* (yield* MessagesRepo.MessagesRepo).insert({
          id: idAt("msg", t),
          workspaceId: c.workspaceId,
          channelId: c.channelId,
          conversationId: c.conversationId,
          contactId: c.contactId,
          direction: "inbound",
          from: "+4915112345678",
          to: "+15550100001",
          body: "from the future",
          category: "utility",
          priority: MessageCategory.PRIORITY.utility,
          status: "delivered",
          metadata: {},
          now: Schemas.toTimestamp(t + 3 * DAY),
          providerMessageId: "wamid.ahead"
        })
        assert.strictEqual(ahead.created_at, Schemas.toTimestamp(t + Partitions.CLOCK_SLACK_MS))
      }))

    it.effect("an inbound message heard again in a later month is not recorded a second time", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* MessagesRepo.MessagesRepo
        const first = (yield* Partitions.partitions("messages"))[0]!
        const boundary = Ids.idTime(first.to)!
        yield* (yield* PartitionsRepo.PartitionsRepo).makeAhead(boundary)
        const c = yield* conversation(boundary - 10 * DAY)
        // heard a minute before the month ends, then again a minute into the next one
        const heard = yield* message(c, boundary - 60_000, "delivered", "wamid.twice")
        assert.isTrue(yield* repo.hasProviderMessage(c.channelId, "wamid.twice"))
        const again = yield* Effect.exit(message(c, boundary + 60_000, "delivered", "wamid.twice"))
        assert.isTrue(Exit.isFailure(again))
        const rows = yield* sql<{ id: string; part: string }>`SELECT id, tableoid::regclass::text AS part
          FROM messages WHERE channel_id = ${c.channelId}`
        assert.deepStrictEqual(rows.map((r) => r.id), [heard.id])
        assert.strictEqual(rows[0]!.part, first.name)
        // the same provider id on another channel is another message
        const other = yield* conversation(boundary - 10 * DAY)
        const elsewhere = yield* message(other, boundary + 60_000, "delivered", "wamid.twice")
        const [row] = yield* sql<{ part: string }>`SELECT tableoid::regclass::text AS part FROM messages
          WHERE id = ${elsewhere.id}`
        assert.strictEqual(row!.part, Partitions.partitionName("messages", boundary))
        assert.strictEqual(yield* repo.idForProviderMessage(other.channelId, "wamid.twice"), elsewhere.id)
      }))

    it.effect("retention drops whole partitions (the timeline with its messages); reads stay right", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* MessagesRepo.MessagesRepo
        const keeper = yield* PartitionsRepo.PartitionsRepo
        const m1 = Ids.idTime((yield* Partitions.partitions("messages"))[0]!.to)!
        const m2 = Partitions.addMonths(m1, 1)
        yield* keeper.makeAhead(m2)
        const c = yield* conversation(m1 - 20 * DAY)
        // one message in the first partition, one in each of the next two months, each with a receipt
        const made: Array<string> = []
        for (const at of [m1 - 10 * DAY, m1 + 15 * DAY, m2 + 5 * DAY]) {
          const m = yield* message(c, at, "sent")
          yield* repo.transition(m.id, "delivered", { occurredAt: Schemas.toTimestamp(at + 1000) })
          made.push(m.id)
        }
        const [x, y, z] = made as [string, string, string]
        const visible = (id: string) => Effect.map(repo.find(c.workspaceId, id), Option.isSome)
        const retention = { eventDays: Option.none(), messageDays: Option.some(30) }

        // kept for good without MESSAGE_RETENTION_DAYS
        const keptForGood = yield* keeper.dropExpired(m2 + 10 * DAY, {
          eventDays: Option.none(),
          messageDays: Option.none()
        })
        assert.isFalse(keptForGood.some((name) => HISTORY.test(name)))
        assert.isTrue(yield* visible(x))

        // m2 + 10 days: every message of the first partition is over 30 days old
        const dropped = yield* keeper.dropExpired(m2 + 10 * DAY, retention)
        assert.deepStrictEqual(dropped.filter((name) => HISTORY.test(name)), [
          "message_transitions_before",
          "messages_before"
        ])
        assert.isFalse(yield* visible(x))
        const found = Option.getOrThrow(yield* repo.find(c.workspaceId, y))
        assert.deepStrictEqual(found.timeline.map((s) => s.to_state), ["sent", "delivered"])
        assert.isTrue(yield* visible(z))
        const listed = yield* repo.list(c.workspaceId, {}, 10, undefined)
        assert.deepStrictEqual(listed.map((m) => m.id), [z, y])

        // 33 days on: y's month goes, with its timeline
        assert.deepStrictEqual((yield* keeper.dropExpired(m2 + 33 * DAY, retention)).filter((n) => HISTORY.test(n)), [
          Partitions.partitionName("message_transitions", m1),
          Partitions.partitionName("messages", m1)
        ])
        assert.isFalse(yield* visible(y))
        assert.deepStrictEqual(Option.getOrThrow(yield* repo.find(c.workspaceId, z)).timeline.map((s) => s.to_state), [
          "sent",
          "delivered"
        ])
        const timeline = yield* sql<{ message_id: string }>`SELECT DISTINCT message_id FROM message_transitions
          WHERE message_id IN (${x}, ${y}, ${z})`
        assert.deepStrictEqual(timeline.map((r) => r.message_id), [z])
        // the queue's counters are untouched by a drop (a month that old holds no queued message)
        const [count] = yield* sql<{ queued: number }>`SELECT COALESCE(sum(queued), 0)::int AS queued
          FROM channel_queue_counts WHERE channel_id = ${c.channelId}`
        assert.strictEqual(count!.queued, 0)
      }))
  })

  layer(UnmigratedLayer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("an installation's conversations of before 0192 find their unread messages of every month once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Migrations.runThrough(191)
        const t = Date.now()
        const time = Schemas.toTimestamp(t)
        const ws = idAt("ws", t)
        const ch = idAt("ch", t)
        const cnt = idAt("cnt", t)
        const cnv = idAt("cnv", t)
        yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${ws}, 'w', ${time}, ${time})`
        yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, created_at, updated_at)
          VALUES (${ch}, ${ws}, 'c', 'sandbox', 'connected', ${time}, ${time})`
        yield* sql`INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at)
          VALUES (${cnt}, ${ws}, '+4915112345678', ${time}, ${time})`
        yield* sql`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, created_at, updated_at)
          VALUES (${cnv}, ${ws}, ${ch}, ${cnt}, 'open', ${time}, ${time})`
        const inbound = (at: number, providerId: string) =>
          Effect.gen(function*() {
            const id = idAt("msg", at)
            yield* sql`INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction,
              from_number, to_number, type, body, category, priority, status, created_at, updated_at,
              provider_message_id)
              VALUES (${id}, ${ws}, ${ch}, ${cnv}, ${cnt}, 'inbound', '+4915112345678', '+15550100001', 'text', 'hi',
                'utility', 2, 'delivered', ${Schemas.toTimestamp(at)}, ${Schemas.toTimestamp(at)}, ${providerId})`
            return id
          })
        // unread for 200 days (the first partition) and since yesterday
        const old = yield* inbound(t - 200 * DAY, "wamid.old")
        const recent = yield* inbound(t - DAY, "wamid.recent")
        assert.include((yield* Migrations.run).map(([id]) => id), 192)
        const mark = Effect.flatMap(
          MessagesRepo.MessagesRepo,
          (repo) => repo.markInboundRead({ conversationId: cnv, upTo: null, now: Schemas.toTimestamp(t) })
        ).pipe(Effect.provide(MessagesRepo.MessagesRepo.Default))
        assert.deepStrictEqual((yield* mark).map((m) => m.id).sort(), [old, recent].sort())
        assert.deepStrictEqual(yield* mark, [])
        // the next message (made next month: the first partition holds this one) is found from
        // its own month, not the first partition's
        const next = yield* inbound(Partitions.addMonths(Partitions.monthStart(t), 1) + DAY, "wamid.next")
        const read = yield* partitionsRead(mark)
        assert.deepStrictEqual(read.result.map((m) => m.id), [next])
        assert.notInclude(read.reads.flatMap((r) => r.partitions), "messages_before")
      }))
  })

  layer(UnmigratedLayer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("an existing installation's messages move into the first partition, none lost, none copied", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Migrations.runThrough(179)
        const t = Date.now()
        const time = Schemas.toTimestamp(t)
        const ws = idAt("ws", t)
        const ch = idAt("ch", t)
        const cnt = idAt("cnt", t)
        const cnv = idAt("cnv", t)
        yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${ws}, 'w', ${time}, ${time})`
        yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, created_at, updated_at)
          VALUES (${ch}, ${ws}, 'c', 'sandbox', 'connected', ${time}, ${time})`
        yield* sql`INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at)
          VALUES (${cnt}, ${ws}, '+4915112345678', ${time}, ${time})`
        yield* sql`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, created_at, updated_at)
          VALUES (${cnv}, ${ws}, ${ch}, ${cnt}, 'open', ${time}, ${time})`
        // a year of history (ids made across it): outbound messages, inbound ones with their
        // provider's ids, and one queued now
        const ages = [400, 200, 35, 1, 0]
        const ids: Array<string> = []
        for (const [i, days] of ages.entries()) {
          const at = t - days * DAY
          const id = idAt("msg", at)
          const inbound = i % 2 === 1
          const status = days === 0 ? "queued" : inbound ? "delivered" : "read"
          yield* sql`INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction,
            from_number, to_number, type, body, category, priority, status, created_at, updated_at, provider_message_id)
            VALUES (${id}, ${ws}, ${ch}, ${cnv}, ${cnt}, ${inbound ? "inbound" : "outbound"}, NULL, '+4915112345678',
              'text', 'hi', 'utility', 2, ${status}, ${Schemas.toTimestamp(at)}, ${Schemas.toTimestamp(at)},
              ${inbound ? `wamid.${i}` : null})`
          yield* sql`INSERT INTO message_transitions (message_id, from_state, to_state, at)
            VALUES (${id}, NULL, ${status}, ${Schemas.toTimestamp(at)})`
          ids.push(id)
        }
        const [before] = yield* sql<{ oid: number }>`SELECT 'messages'::regclass::oid AS oid`

        const applied = yield* Migrations.run
        assert.include(applied.map(([id]) => id), 180)
        for (const table of ["messages", "message_transitions"]) {
          const parts = yield* Partitions.partitions(table)
          assert.strictEqual(parts[0]!.name, `${table}_before`)
          assert.isNull(parts[0]!.from)
          assert.isAtLeast(parts.length, 1 + Partitions.AHEAD_MONTHS)
          const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(parts[0]!.name)}`
          assert.strictEqual(count!.n, ages.length, table)
        }
        // the old table itself is the first partition (same relation: nothing copied)
        const [moved] = yield* sql<{ oid: number }>`SELECT 'messages_before'::regclass::oid AS oid`
        assert.strictEqual(moved!.oid, before!.oid)
        // the inbound messages' provider ids are claimed: heard again, they are known
        const claimed = yield* sql<{ provider_message_id: string; message_id: string }>`SELECT provider_message_id,
          message_id FROM message_provider_ids WHERE channel_id = ${ch} ORDER BY provider_message_id`
        assert.deepStrictEqual(claimed.map((r) => [r.provider_message_id, r.message_id]), [
          ["wamid.1", ids[1]],
          ["wamid.3", ids[3]]
        ])
        // the queue's counter goes on counting through the partitioned table's triggers
        const queued = Effect.map(
          sql<{ n: number }>`SELECT COALESCE(sum(queued), 0)::int AS n FROM channel_queue_counts
            WHERE channel_id = ${ch}`,
          (rows) => rows[0]!.n
        )
        assert.strictEqual(yield* queued, 1)
        const later = Partitions.addMonths(Partitions.monthStart(t), 1) + DAY
        const laterId = idAt("msg", later)
        yield* sql`INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction,
            to_number, type, body, category, priority, status, created_at, updated_at)
            VALUES (${laterId}, ${ws}, ${ch}, ${cnv}, ${cnt}, 'outbound', '+4915112345678', 'text', 'hi', 'utility', 2,
              'queued', ${Schemas.toTimestamp(later)}, ${Schemas.toTimestamp(later)})`
        assert.strictEqual(yield* queued, 2)
        yield* sql`UPDATE messages SET status = 'dispatching' WHERE id IN (${laterId}, ${ids[4]!})`
        assert.strictEqual(yield* queued, 0)
        const [row] = yield* sql<{ part: string }>`SELECT tableoid::regclass::text AS part FROM messages
          WHERE id = ${laterId}`
        assert.strictEqual(row!.part, Partitions.partitionName("messages", Partitions.monthStart(later)))
        // the timeline's ids go on from the same sequence
        yield* sql`INSERT INTO message_transitions (message_id, from_state, to_state, at)
          VALUES (${laterId}, 'queued', 'dispatching', ${Schemas.toTimestamp(later)})`
        const [transition] = yield* sql<{ id: string }>`SELECT id::text FROM message_transitions
          WHERE message_id = ${laterId}`
        assert.strictEqual(transition!.id, String(ages.length + 1))
      }))
  })
})
