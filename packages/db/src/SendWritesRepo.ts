/**
 * The send's writes in ONE statement: the contact (created when new, within the plan's contacts
 * limit), the conversation (created, or opened again), the message `queued` with its first
 * timeline row, the events of all three with their webhook deliveries and the wake-up of active
 * endpoints, and the stored idempotent response. Each statement through the SQL client costs the
 * api node more CPU than the query costs the database, and a socket write besides (bench/RESULTS.md,
 * the send path): the same writes were ten statements and a transaction.
 *
 * The statement checks before it writes: a lost idempotency claim or a new contact beyond the plan
 * writes nothing and says so. It runs on its own (one statement commits atomically) or inside the
 * transaction of a send that needs a lock first (a QR channel's safety cap, a monthly quota). A
 * send that may create a counted contact under a limit takes the workspace's contacts lock inside
 * the statement, to its commit (`ContactsLimitLock.usedLocked`); a send to a counted contact takes none.
 */
import { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { ArrivalEvents, Events, Ids, LidAddress, type Messaging } from "@switchboard/domain"
import { Effect, Schema } from "effect"
import { usedLocked } from "./ContactsLimitLock.js"
import { ContactCtes } from "./ContactsRepo.js"
import { envelopeTemplate, EventsRepo } from "./EventsRepo.js"
import type { ClaimRef } from "./IdempotencyRepo.js"
import { dieOnDatabaseError } from "./Rows.js"
import { conversationArrivalCtes } from "./statements/ConversationArrival.js"

export interface SendWrite {
  /**
   * The message as it is written (`queued`, outbound), with the ids of a NEW contact and
   * conversation: where the recipient's contact or conversation exists, its id replaces them
   */
  readonly message: Messaging.Message
  readonly priority: number
  /** the plan's contacts limit: a new contact is refused when the workspace has this many; `null`: none */
  readonly contactsLimit: number | null
  /**
   * The `Idempotency-Key` claim this send holds and the response it stores (encoded); the
   * response's top-level `contact_id` and `conversation_id` are set to the actual ones
   */
  readonly claim: { readonly ref: ClaimRef; readonly response: unknown } | undefined
}

export type SendWritten =
  | {
    readonly _tag: "Written"
    /** null for a send to a group chat */
    readonly contactId: Messaging.Message["contact_id"]
    readonly contactCreated: boolean
    readonly conversationId: Messaging.Message["conversation_id"]
  }
  /** a new contact beyond the plan's limit: `used` contacts exist */
  | { readonly _tag: "ContactsLimitReached"; readonly used: number }
  /** the claim was taken over by a retry (this request stalled past its lease) */
  | { readonly _tag: "ClaimLost" }
  /** the LID the send addresses names no contact any more (deleted since the reply was checked) */
  | { readonly _tag: "LidContactGone" }

/** The statement's one row: what it did, the contact's and conversation's ids typed while decoding. */
const Row = Schema.Struct({
  claimed: Schema.Boolean,
  contacts_used: Schema.NullOr(Schema.Number),
  contact_id: Schema.NullOr(Ids.Id("cnt")),
  contact_created: Schema.NullOr(Schema.Boolean),
  conversation_id: Schema.NullOr(Ids.Id("cnv"))
})
type Row = typeof Row.Type
const decodeRow = Schema.decodeUnknown(Row)

/** A concurrent send that created the same contact or conversation first is seen by a next statement. */
const ATTEMPTS = 3

export class SendWritesRepo extends Effect.Service<SendWritesRepo>()("@switchboard/db/SendWritesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const events = yield* EventsRepo

    /**
     * The events the send may write, as the repositories of the same writes make them
     * (`contactCreatedEvent`, `arrivalEvent`, `queuedEvent`), each with the condition on the
     * statement's `outcome` (o, the CTE `outcome`) under which it is written; their ids
     * are drawn in the order those writes draw them. A conversation's event names the contact and
     * conversation as they turn out: those members of its envelope are filled in by the statement.
     */
    const sendEvents = Effect.fn("SendWritesRepo.events")(function*(message: Messaging.Message) {
      const workspaceId = message.workspace_id
      const createdAt = message.created_at
      const selects: Array<Statement.Fragment> = []
      const add = (
        id: string,
        when: Statement.Fragment,
        event: Events.DomainEvent,
        open: Record<string, Statement.Fragment> = {}
      ) =>
        selects.push(
          sql`SELECT ${id}::text AS id, ${workspaceId}::text AS workspace_id, ${event.type}::text AS type, ${
            open["object_id"] ?? sql`${event.data.object_id}::text`
          } AS object_id, ${
            events.envelopeSql(
              envelopeTemplate({ id, event, createdAt, workspaceId, open: Object.keys(open) }),
              open
            )
          } AS envelope, ${createdAt}::timestamptz AS created_at FROM outcome o WHERE ${when}`
        )
      // a send to a group chat has no contact (docs/API.md "Group chats")
      if (message.contact_id !== null) {
        add(yield* Ids.newId("evt"), sql`o.contact_created`, ArrivalEvents.contactCreatedEvent(message.contact_id))
      }
      // one of these at most: the conversation had one status before the send
      const conversationEvent = yield* Ids.newId("evt")
      for (const prior of [null, "open", "closed"] as const) {
        const event = ArrivalEvents.arrivalEvent(prior, "outbound", {
          id: message.conversation_id,
          channelId: message.channel_id,
          contactId: message.contact_id,
          groupChatId: message.group_chat_id
        })
        if (event !== undefined) {
          add(
            conversationEvent,
            prior === null ? sql`o.prior IS NULL` : sql`o.prior = ${prior}`,
            event,
            {
              object_id: sql`o.conversation_id`,
              conversation_id: sql`o.conversation_id`,
              // a group chat's conversation has no contact: `null` as written, not filled in
              ...(message.group_chat_id === undefined ? { contact_id: sql`o.contact_id` } : {})
            }
          )
        }
      }
      add(yield* Ids.newId("evt"), sql`true`, Events.queuedEvent(message))
      return sql.join(" UNION ALL ", false)(selects)
    })

    /** The send's writes as CTEs (to follow `WITH`). */
    const sendCtes = (input: SendWrite) => {
      const { claim, message: m } = input
      const workspaceId = m.workspace_id
      const now = m.created_at
      const limit = input.contactsLimit
      const newContact = m.contact_id
      const newConversation = m.conversation_id
      // the member named after a non-text type (`image: {...}`), as the wire shows it
      const member = m.type === "text" || m.type === "template" ? undefined : m[m.type]
      // a reply to a contact WhatsApp named by LID alone goes to its LID: that contact exists (a
      // LID contact is never made by a send)
      const lid = LidAddress.addressedLid(m.to)
      const groupChatId = m.group_chat_id
      // a send to a group chat: no contact (one row of nulls, under the claim), the group chat's conversation
      const party = groupChatId === undefined
        ? sql`${ContactCtes.found(sql, workspaceId, m.to, lid)}, room AS (
          -- a contact that counts already needs no room (and takes no lock); a new one, or one
          -- only group chats brought in (it counts once this send opens its 1:1 conversation),
          -- does: counted under the workspace's contacts lock, held to commit, so concurrent sends
          -- and creates take the last places one at a time (docs/LIMITS.md "Plans")
          SELECT CASE WHEN ${limit}::int IS NULL OR EXISTS (SELECT 1 FROM contact_found WHERE counted) THEN NULL
            ELSE ${usedLocked(sql, workspaceId, m.to)} END AS used
        ), ${
          ContactCtes.ofNumber(sql, {
            id: newContact!,
            workspaceId,
            phone: m.to,
            now,
            create: sql`(SELECT ok FROM go) AND (SELECT used IS NULL OR used < ${limit}::int FROM room)
            AND ${lid === undefined}`,
            use: sql`(SELECT ok FROM go) AND (SELECT used IS NULL OR used < ${limit}::int FROM room)`
          })
        }`
        : sql`room AS (SELECT NULL::int AS used), contact AS (
          SELECT NULL::text AS id, false AS created WHERE (SELECT ok FROM go)
        )`
      // every write below is guarded: by the claim (still this request's), by the contacts limit,
      // and by the rows before it (no conversation without a contact, no message without both)
      return sql`${
        claim
          ? sql`claim AS (
          SELECT key FROM idempotency_keys WHERE workspace_id = ${workspaceId} AND key = ${claim.ref.key}
            AND claim_id = ${claim.ref.claimId} AND state = 'running' FOR UPDATE
        ), go AS (SELECT EXISTS (SELECT 1 FROM claim) AS ok),`
          : sql`go AS (SELECT true AS ok),`
      } ${party}, ${
        conversationArrivalCtes(sql, {
          id: newConversation,
          workspaceId,
          channelId: m.channel_id,
          contact: sql`contact k`,
          groupChatId,
          now,
          inbound: false
        })
      }, message AS (
          INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction,
            from_number, to_number, type, body, template, category, priority, status, metadata, created_at, updated_at,
            content, reply_to, media_id, media_status, group_chat_id)
          SELECT ${m.id}, ${workspaceId}, ${m.channel_id}, conversation.id, contact.id, 'outbound',
            ${m.from}, ${m.to}, ${m.type}, ${m.text.body},
            ${m.template ? JSON.stringify(m.template) : null}::jsonb, ${m.category}, ${input.priority},
            'queued', ${JSON.stringify(m.metadata)}::jsonb, ${now}, ${now},
            ${member === undefined ? null : JSON.stringify(member)}::jsonb, ${m.context.reply_to},
            ${m.media?.id ?? null}, ${m.media?.status ?? null}, ${groupChatId ?? null}
          FROM contact contact, conversation conversation
          RETURNING id, contact_id, conversation_id
        ), timeline AS (
          INSERT INTO message_transitions (message_id, from_state, to_state, at)
          SELECT id, NULL, 'queued', ${now} FROM message
        ), outcome AS (
          SELECT m.contact_id, m.conversation_id, c.created AS contact_created, v.prior
          FROM message m, contact c, conversation v
        )${
        claim
          ? sql`, stored AS (
          UPDATE idempotency_keys k SET state = 'done', response = jsonb_set(jsonb_set(${
            JSON.stringify(claim.response)
          }::jsonb, '{contact_id}', COALESCE(to_jsonb(o.contact_id), 'null'::jsonb)), '{conversation_id}',
            to_jsonb(o.conversation_id))
          FROM outcome o
          WHERE k.workspace_id = ${workspaceId} AND k.key = ${claim.ref.key} AND k.claim_id = ${claim.ref.claimId}
            AND k.state = 'running'
        )`
          : sql``
      }`
    }

    /** The send's statement: its writes, their events' outbox write, and one row saying what happened. */
    const statement = (input: SendWrite, emitted: Statement.Fragment) =>
      sql`WITH ${sendCtes(input)}, emitted AS (${emitted}), ${
        events.outboxCtes(sql`SELECT id, workspace_id, type, object_id, envelope, created_at FROM emitted`)
      }
        SELECT g.ok AS claimed, r.used AS contacts_used, o.contact_id, o.contact_created, o.conversation_id,
          ${events.outboxWoken} AS woken
        FROM go g, room r LEFT JOIN outcome o ON true`

    /** What the send's row says: `undefined` when nothing was written and a next statement should try again. */
    const outcomeOf = (input: SendWrite, row: Row): SendWritten | undefined => {
      if (!row.claimed) return { _tag: "ClaimLost" }
      const group = input.message.group_chat_id !== undefined
      if ((row.contact_id !== null || group) && row.conversation_id !== null) {
        return {
          _tag: "Written",
          contactId: row.contact_id,
          contactCreated: row.contact_created === true,
          conversationId: row.conversation_id
        }
      }
      if (row.contact_id === null && LidAddress.addressedLid(input.message.to) !== undefined) {
        return { _tag: "LidContactGone" }
      }
      if (row.contacts_used !== null && input.contactsLimit !== null && row.contacts_used >= input.contactsLimit) {
        return { _tag: "ContactsLimitReached", used: row.contacts_used }
      }
      // nothing was written: a concurrent send inserted the contact or the conversation after
      // this statement's snapshot; the next statement sees it
      return undefined
    }

    /** Writes the send (see the module's comment); call it alone or inside the send's transaction. */
    const write = Effect.fn("SendWritesRepo.write")(function*(input: SendWrite) {
      const emitted = yield* sendEvents(input.message)
      for (let attempt = 1;; attempt++) {
        const row = yield* decodeRow((yield* statement(input, emitted))[0])
        const written = outcomeOf(input, row)
        if (written !== undefined) return written
        if (attempt === ATTEMPTS) return yield* Effect.dieMessage("the send's contact or conversation kept racing")
      }
    }, dieOnDatabaseError)

    return { write } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
