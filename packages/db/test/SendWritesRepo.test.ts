import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, layer } from "@effect/vitest"
import { ContactsRepo, ConversationsRepo, EventsRepo, MessagesRepo, SendWritesRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, MessageCategory, Messaging, Schemas } from "@switchboard/domain"
import { Chunk, Effect, Fiber, Layer, Option, Schema, Stream } from "effect"

const TestLayer = Layer.mergeAll(
  SendWritesRepo.SendWritesRepo.Default,
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  EventsRepo.EventsRepo.Default
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

/** A workspace with one channel and four webhook endpoints, one of each kind the fan-out tells apart. */
const workspace = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const now = Schemas.toTimestamp(Date.now())
  const workspaceId = yield* Ids.newId("ws")
  const channelId = yield* Ids.newId("ch")
  yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now}, ${now})`
  yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, phone_number, created_at, updated_at)
    VALUES (${channelId}, ${workspaceId}, 'c', 'cloud', 'connected', '+4930123456', ${now}, ${now})`
  const endpoint = (name: string, status: string, types: ReadonlyArray<string>, deleted = false) =>
    Effect.gen(function*() {
      const id = yield* Ids.newId("wh")
      yield* sql`INSERT INTO webhook_endpoints (id, workspace_id, url, event_types, status, secret_sealed,
          secret_last4, created_at, updated_at, deleted_at)
        VALUES (${id}, ${workspaceId}, ${`https://example.com/${name}`}, ${types}::text[], ${status}, 's', 'abcd',
          ${now}, ${now}, ${deleted ? now : null})`
      return id
    })
  const endpoints = {
    everything: yield* endpoint("everything", "active", ["*"]),
    paused: yield* endpoint("paused", "paused", ["message.queued", "conversation.created"]),
    sentOnly: yield* endpoint("sent-only", "active", ["message.sent"]),
    disabled: yield* endpoint("disabled", "disabled", ["*"]),
    deleted: yield* endpoint("deleted", "active", ["*"], true)
  }
  return { workspaceId, channelId, endpoints }
}).pipe(Effect.orDie)

/** A message as the send builds it: queued, with the ids of a new contact and conversation. */
const queued = (workspaceId: string, channelId: string, to: string, now: string, options: {
  readonly template?: { id: string; slug: string; variables: Record<string, string> }
} = {}) =>
  Effect.gen(function*() {
    return new Messaging.Message({
      id: yield* Ids.newId("msg"),
      object: "message",
      workspace_id: workspaceId as Messaging.Message["workspace_id"],
      channel_id: channelId as Messaging.Message["channel_id"],
      conversation_id: yield* Ids.newId("cnv"),
      contact_id: yield* Ids.newId("cnt"),
      direction: "outbound",
      from: "+4930123456",
      to,
      type: options.template ? "template" : "text",
      text: { body: options.template ? "Your code is 1234" : "hi" },
      template: options.template
        ? { ...options.template, id: options.template.id as `tpl_${string}` }
        : null,
      category: "utility",
      status: "queued",
      failure: null,
      metadata: { order: "42" },
      created_at: now,
      updated_at: now,
      sent_at: null,
      delivered_at: null,
      read_at: null,
      context: { reply_to: null },
      sender: null,
      media: null
    })
  })

/** The same writes through the repositories one statement at a time, as the send made them before. */
const writtenByRepos = (message: Messaging.Message) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const contacts = yield* ContactsRepo.ContactsRepo
    const conversations = yield* ConversationsRepo.ConversationsRepo
    const messages = yield* MessagesRepo.MessagesRepo
    return yield* sql.withTransaction(Effect.gen(function*() {
      const contact = yield* contacts.upsertContact(message.workspace_id, message.to, message.created_at)
      const conversationId = yield* conversations.upsertConversation(
        message.workspace_id,
        message.channel_id,
        contact.id,
        message.created_at
      )
      const created = yield* messages.insert({
        id: message.id,
        workspaceId: message.workspace_id,
        channelId: message.channel_id,
        conversationId,
        contactId: contact.id,
        direction: "outbound",
        from: message.from,
        to: message.to,
        body: message.text.body,
        ...(message.template ? { template: message.template } : {}),
        category: message.category,
        priority: MessageCategory.PRIORITY[message.category],
        status: "queued",
        metadata: message.metadata,
        now: message.created_at
      })
      yield* messages.appendQueuedEvent(created)
      return created
    }))
  }).pipe(Effect.orDie)

/** Ids differ from one path to the other; everything else must be the same bytes. */
const anonymous = (text: string) => text.replace(/\b(evt|cnt|cnv|msg|whd)_[0-9A-HJKMNP-TV-Z]{26}\b/g, "$1_*")

/** The events of one message's writes (those with its time), and their deliveries. */
const outbox = (workspaceId: string, since: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* sql<{ id: string; type: string; object_id: string; envelope: string; created_at: Date }>`
      SELECT id, type, object_id, envelope, created_at FROM events
      WHERE workspace_id = ${workspaceId} AND created_at = ${since} ORDER BY id`
    const deliveries = yield* sql<{ id: string; endpoint_id: string; event_id: string; event_type: string }>`
      SELECT d.id, d.endpoint_id, d.event_id, d.event_type FROM webhook_deliveries d
      WHERE d.workspace_id = ${workspaceId} AND d.status = 'pending' AND d.next_attempt_at = ${since}
        AND d.created_at = ${since} AND d.updated_at = ${since} AND d.attempt_count = 0
      ORDER BY d.event_type, d.endpoint_id`
    return { events, deliveries }
  }).pipe(Effect.orDie)

/** One instant per write, so each write's events can be told apart by their time. */
let tick = Date.now()
const nextInstant = () => Schemas.toTimestamp(tick += 1000)

describe("SendWritesRepo", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("writes the same events, byte for byte, and the same deliveries as the repositories did", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const writes = yield* SendWritesRepo.SendWritesRepo
        const { channelId, endpoints, workspaceId } = yield* workspace
        const template = { id: yield* Ids.newId("tpl"), slug: "otp", variables: { code: "1234" } }
        // new contact and conversation; the same again (open); after a close (reopened); a template send
        const steps: ReadonlyArray<{ close?: boolean; template?: typeof template; expected: Array<string> }> = [
          { expected: ["contact.created", "conversation.created", "message.queued"] },
          { expected: ["message.queued"] },
          { close: true, expected: ["conversation.reopened", "message.queued"] },
          { template, expected: ["message.queued"] }
        ]
        for (const step of steps) {
          if (step.close) yield* sql`UPDATE conversations SET status = 'closed' WHERE channel_id = ${channelId}`
          const before = nextInstant()
          const reference = yield* writtenByRepos(
            yield* queued(workspaceId, channelId, "+4915100000001", before, { ...step })
          )
          const now = nextInstant()
          const message = yield* queued(workspaceId, channelId, "+4915100000002", now, { ...step })
          const written = yield* writes.write({
            message,
            priority: MessageCategory.PRIORITY.utility,
            contactsLimit: null,
            claim: undefined
          })
          assert.strictEqual(written._tag, "Written")
          const expected = yield* outbox(workspaceId, before)
          const actual = yield* outbox(workspaceId, now)
          assert.deepStrictEqual(actual.events.map((e) => e.type), step.expected)
          assert.deepStrictEqual(
            actual.events.map((e) => [e.type, anonymous(e.object_id), anonymous(e.envelope).replace(now, "T")]),
            expected.events.map((e) => [e.type, anonymous(e.object_id), anonymous(e.envelope).replace(before, "T")])
          )
          // each event's own id is in its envelope; the contact's and conversation's are the actual ones
          for (const event of actual.events) {
            const envelope = JSON.parse(event.envelope)
            assert.strictEqual(envelope.id, event.id)
            if (written._tag === "Written" && event.type !== "message.queued") {
              assert.include(event.envelope, written.contactId!)
              if (event.type !== "contact.created") assert.include(event.envelope, written.conversationId)
            }
          }
          const shape = (d: ReadonlyArray<{ id: string; endpoint_id: string; event_type: string }>) =>
            d.map((x) => [anonymous(x.id), x.endpoint_id, x.event_type])
          assert.deepStrictEqual(shape(actual.deliveries), shape(expected.deliveries))
          // every subscribed endpoint that is not disabled or deleted, paused ones included
          for (const type of step.expected) {
            const to = actual.deliveries.filter((d) => d.event_type === type).map((d) => d.endpoint_id).sort()
            const subscribed = [endpoints.everything, ...(type === "contact.created" ? [] : [endpoints.paused])]
            assert.deepStrictEqual(
              to,
              (type === "conversation.reopened" ? [endpoints.everything] : subscribed).sort(),
              type
            )
          }
          const rows = yield* sql<{ id: string; contact_id: string; conversation_id: string }>`
            SELECT m.id, m.contact_id, m.conversation_id FROM messages m
            JOIN message_transitions t ON t.message_id = m.id AND t.to_state = 'queued' AND t.from_state IS NULL
            WHERE m.id = ${message.id} AND m.status = 'queued'`
          assert.strictEqual(rows.length, 1)
          if (written._tag === "Written") {
            assert.strictEqual(rows[0]!.contact_id, written.contactId)
            assert.strictEqual(rows[0]!.conversation_id, written.conversationId)
          }
        }
      }))

    it.effect("stores the response with the actual contact and conversation, or writes nothing when the claim was lost", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const writes = yield* SendWritesRepo.SendWritesRepo
        const { channelId, workspaceId } = yield* workspace
        const claim = (key: string) =>
          sql`INSERT INTO idempotency_keys (workspace_id, key, fingerprint, state, created_at, expires_at, claim_id, lease_until)
            VALUES (${workspaceId}, ${key}, 'f', 'running', now(), now() + interval '1 day', ${`claim-${key}`},
              now() + interval '10 seconds')`
        // an existing contact, so the stored response must name it, not the new id the message carried
        yield* writtenByRepos(yield* queued(workspaceId, channelId, "+4915100000003", nextInstant()))
        yield* claim("held")
        const message = yield* queued(workspaceId, channelId, "+4915100000003", nextInstant())
        const response = Schema.encodeSync(Messaging.Message)(message)
        const written = yield* writes.write({
          message,
          priority: MessageCategory.PRIORITY.utility,
          contactsLimit: null,
          claim: { ref: { workspaceId, key: "held", claimId: "claim-held" }, response }
        })
        assert.strictEqual(written._tag, "Written")
        const stored = yield* sql<{ state: string; response: unknown }>`SELECT state, response FROM idempotency_keys
          WHERE workspace_id = ${workspaceId} AND key = 'held'`
        const body = (typeof stored[0]!.response === "string"
          ? JSON.parse(stored[0]!.response)
          : stored[0]!.response) as Record<string, unknown>
        assert.strictEqual(stored[0]!.state, "done")
        if (written._tag === "Written") {
          assert.notStrictEqual(written.contactId, message.contact_id)
          assert.strictEqual(body["contact_id"], written.contactId)
          assert.strictEqual(body["conversation_id"], written.conversationId)
        }
        assert.strictEqual(body["id"], message.id)

        // a retry took the key over while this request stalled: nothing of it is written
        yield* claim("stalled")
        yield* sql`UPDATE idempotency_keys SET claim_id = 'the-retry' WHERE workspace_id = ${workspaceId} AND key = 'stalled'`
        const lost = yield* queued(workspaceId, channelId, "+4915100000004", nextInstant())
        const refused = yield* writes.write({
          message: lost,
          priority: MessageCategory.PRIORITY.utility,
          contactsLimit: null,
          claim: { ref: { workspaceId, key: "stalled", claimId: "claim-stalled" }, response: {} }
        })
        assert.strictEqual(refused._tag, "ClaimLost")
        const left = yield* sql<{ n: number }>`SELECT
            (SELECT count(*) FROM messages WHERE id = ${lost.id})
          + (SELECT count(*) FROM contacts WHERE workspace_id = ${workspaceId} AND phone_number = '+4915100000004')
          + (SELECT count(*) FROM events WHERE workspace_id = ${workspaceId} AND created_at = ${lost.created_at}) AS n`
        assert.strictEqual(Number(left[0]!.n), 0)
        const key = yield* sql<{ claim_id: string; state: string }>`SELECT claim_id, state FROM idempotency_keys
          WHERE workspace_id = ${workspaceId} AND key = 'stalled'`
        assert.deepStrictEqual([key[0]!.claim_id, key[0]!.state], ["the-retry", "running"])
      }))

    it.effect("refuses a new contact at the plan's limit and writes nothing; an existing contact still gets its message", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const writes = yield* SendWritesRepo.SendWritesRepo
        const { channelId, workspaceId } = yield* workspace
        const send = (to: string, contactsLimit: number | null) =>
          Effect.flatMap(
            queued(workspaceId, channelId, to, nextInstant()),
            (message) =>
              writes.write({ message, priority: MessageCategory.PRIORITY.utility, contactsLimit, claim: undefined })
          )
        assert.strictEqual((yield* send("+4915100000011", 2))._tag, "Written")
        assert.strictEqual((yield* send("+4915100000012", 2))._tag, "Written")
        const over = yield* send("+4915100000013", 2)
        assert.deepStrictEqual(over, { _tag: "ContactsLimitReached", used: 2 })
        assert.strictEqual((yield* send("+4915100000011", 2))._tag, "Written")
        const contacts = yield* sql<
          { n: number }
        >`SELECT count(*)::int AS n FROM contacts WHERE workspace_id = ${workspaceId}`
        assert.strictEqual(contacts[0]!.n, 2)
        const messages = yield* sql<
          { n: number }
        >`SELECT count(*)::int AS n FROM messages WHERE workspace_id = ${workspaceId}`
        assert.strictEqual(messages[0]!.n, 3)
      }))

    it.effect("makes one contact and one conversation of concurrent first sends to a number", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const writes = yield* SendWritesRepo.SendWritesRepo
        const { channelId, workspaceId } = yield* workspace
        const now = nextInstant()
        const results = yield* Effect.forEach(
          Array.from({ length: 10 }),
          () =>
            Effect.flatMap(
              queued(workspaceId, channelId, "+4915100000021", now),
              (message) =>
                writes.write({
                  message,
                  priority: MessageCategory.PRIORITY.utility,
                  contactsLimit: 5,
                  claim: undefined
                })
            ),
          { concurrency: "unbounded" }
        )
        assert.isTrue(results.every((r) => r._tag === "Written"))
        const ids = new Set(results.map((r) => r._tag === "Written" ? `${r.contactId}/${r.conversationId}` : ""))
        assert.strictEqual(ids.size, 1)
        assert.strictEqual(results.filter((r) => r._tag === "Written" && r.contactCreated).length, 1)
        const counts = yield* sql<{ type: string; n: number }>`SELECT type, count(*)::int AS n FROM events
          WHERE workspace_id = ${workspaceId} GROUP BY type ORDER BY type`
        assert.deepStrictEqual(counts.map((c) => [c.type, c.n]), [
          ["contact.created", 1],
          ["conversation.created", 1],
          ["message.queued", 10]
        ])
      }))

    it.effect("wakes each active endpoint with deliveries once the statement commits, never a paused one", () =>
      Effect.gen(function*() {
        // listening takes a connection of its own: only on a Postgres server
        const pg = yield* Effect.serviceOption(PgClient.PgClient)
        if (TestDatabase.mode() !== "real" || Option.isNone(pg)) return
        const writes = yield* SendWritesRepo.SendWritesRepo
        const { channelId, endpoints, workspaceId } = yield* workspace
        const heard = yield* pg.value.listen(EventsRepo.WEBHOOK_WAKE_CHANNEL).pipe(
          Stream.filter((id) => (Object.values(endpoints) as ReadonlyArray<string>).includes(id)),
          Stream.interruptAfter("1500 millis"),
          Stream.runCollect,
          Effect.fork
        )
        yield* Effect.sleep("200 millis")
        yield* writes.write({
          message: yield* queued(workspaceId, channelId, "+4915100000031", nextInstant()),
          priority: MessageCategory.PRIORITY.utility,
          contactsLimit: null,
          claim: undefined
        })
        const woken = yield* Fiber.join(heard).pipe(Effect.orDie)
        // one wake-up for the three events' deliveries to it; none for the paused endpoint
        assert.deepStrictEqual(Chunk.toReadonlyArray(woken), [endpoints.everything])
      }))
  })
})
