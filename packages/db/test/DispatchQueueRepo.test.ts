import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ContactsRepo, ConversationsRepo, DispatchQueueRepo, MessagesRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { newId, toTimestamp } from "@switchboard/domain"
import type { MessageStatus } from "@switchboard/domain"
import { Effect, Layer } from "effect"

const TestLayer = Layer.mergeAll(
  MessagesRepo.Default,
  ContactsRepo.Default,
  ConversationsRepo.Default,
  DispatchQueueRepo.Default
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const at = (offsetMs: number) => toTimestamp(Date.now() + offsetMs)

/** A workspace with one channel per entry of `messages`, each holding that one message. */
const channelsWith = (
  messages: ReadonlyArray<{ status: MessageStatus; direction?: "inbound" | "outbound"; ageMs: number }>
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* MessagesRepo
    const contacts = yield* ContactsRepo
    const conversations = yield* ConversationsRepo
    const workspaceId = yield* newId("ws")
    yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${at(0)}, ${
      at(0)
    })`
    const channelIds: Array<string> = []
    for (const [i, m] of messages.entries()) {
      const channelId = yield* newId("ch")
      yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, created_at, updated_at)
        VALUES (${channelId}, ${workspaceId}, ${`c${i}`}, 'sandbox', 'connected', ${at(0)}, ${at(0)})`
      const contact = yield* contacts.upsertContact(workspaceId, "+4915112345678", at(0))
      const conversationId = yield* conversations.upsertConversation(workspaceId, channelId, contact.id, at(0))
      const message = yield* repo.insert({
        id: yield* newId("msg"),
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

describe("DispatchQueueRepo", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("finds channels whose receipts are overdue at any stage before read, outbound only", () =>
      Effect.gen(function*() {
        const repo = yield* DispatchQueueRepo
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
        const repo = yield* DispatchQueueRepo
        const withDue = yield* channelsWith(Array.from({ length: 5 }, () => ({ status: "queued" as const, ageMs: 0 })))
        const [idle] = yield* channelsWith([{ status: "sent", ageMs: 0 }])
        // the sweeper's walk: a page of 2 after the last id woken, back to the start after a short page
        const woken: Array<string> = []
        let cursor = ""
        for (let sweep = 0; sweep < 4; sweep++) {
          const page = yield* repo.channelsWithDueWork(2, cursor)
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
        const repo = yield* DispatchQueueRepo
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
  })
})
