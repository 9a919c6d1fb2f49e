/**
 * Appends events to the outbox. Call `append` INSIDE the transaction that makes
 * the change it reports; the envelope is serialised once here and stored byte for byte.
 *
 * Fan-out to webhook deliveries (one row per subscribed, active endpoint) hooks in here too, so
 * every writer gets it by calling `append`, and so does the wake-up of those endpoints.
 */
import { SqlClient } from "@effect/sql"
import type { Statement } from "@effect/sql"
import { type EventCatalogue, type Events, Ids, Schemas } from "@switchboard/domain"
import { Clock, Effect, Schema } from "effect"
import { decodeRows, dieOnDatabaseError } from "./Rows.js"

/** A subscribed endpoint the outbox fans an event out to (paused ones are not woken). */
const decodeSubscribers = decodeRows(Schema.Struct({ id: Ids.Id("wh"), status: Schema.Literal("active", "paused") }))

/**
 * The Postgres notification channel of new deliveries: its payload is the endpoint's id, sent at
 * commit (the webhook sweeper listens and wakes the endpoint; its poll stays the safety net).
 */
export const WEBHOOK_WAKE_CHANNEL = "webhook_deliveries_due"

/** The envelope every event is stored and delivered as (`append` and `envelopeTemplate` share it). */
const envelopeOf = (input: {
  readonly id: string
  readonly type: EventCatalogue.EventType
  readonly createdAt: string
  readonly workspaceId: string
  readonly isTest: boolean
  readonly data: unknown
}) => ({
  id: input.id,
  type: input.type,
  created_at: input.createdAt,
  workspace_id: input.workspaceId,
  ...(input.isTest ? { is_test: true } : {}),
  data: input.data
})

/**
 * An event's envelope, serialised exactly as `append` does, with the values of some fields left
 * open for the statement that writes it to fill in: a status change learns the state it came from
 * (and the message's workspace and category) only when it locks the row. `parts` are the text
 * around the open values; `slots` name the open fields in the order they appear. The event is
 * built (and checked by its schema) with placeholder values for them.
 */
export interface EnvelopeTemplate {
  readonly parts: ReadonlyArray<string>
  readonly slots: ReadonlyArray<string>
}

/** Marks an open value in the serialised text; the nonce keeps a submitted string from imitating it. */
const SLOT_MARK = `\u0000${Math.random().toString(36).slice(2)}:`

export const envelopeTemplate = (input: {
  readonly id: string
  readonly event: Events.DomainEvent
  readonly createdAt: string
  /** a placeholder when `workspace_id` is open */
  readonly workspaceId: string
  /** envelope or data fields whose (string) values the statement supplies */
  readonly open: ReadonlyArray<string>
}): EnvelopeTemplate => {
  const slots: Array<string> = []
  const text = JSON.stringify(
    envelopeOf({ ...input, type: input.event.type, isTest: input.event.isTest, data: input.event.encodeData() }),
    (key, value) => {
      if (typeof value !== "string" || !input.open.includes(key)) return value
      slots.push(key)
      return `${SLOT_MARK}${slots.length - 1}`
    }
  )
  const parts: Array<string> = []
  let from = 0
  slots.forEach((_, i) => {
    const marker = JSON.stringify(`${SLOT_MARK}${i}`)
    const at = text.indexOf(marker, from)
    parts.push(text.slice(from, at))
    from = at + marker.length
  })
  parts.push(text.slice(from))
  return { parts, slots }
}

export interface AppendedEvent {
  readonly id: string
  readonly type: EventCatalogue.EventType
  readonly workspace_id: string
  readonly created_at: string
  readonly envelope: string
}

export class EventsRepo extends Effect.Service<EventsRepo>()("@switchboard/db/EventsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const append = Effect.fn("EventsRepo.append")(function*(input: {
      readonly workspaceId: string
      /** built with `DomainEvent.make` (its data typed by its type) */
      readonly event: Events.DomainEvent
      /** when the event occurred; defaults to now */
      readonly occurredAt?: string
    }) {
      const id = yield* Ids.newId("evt")
      const createdAt = input.occurredAt ?? Schemas.toTimestamp(yield* Clock.currentTimeMillis)
      const { isTest, type } = input.event
      const data = input.event.encodeData()
      const envelope = JSON.stringify(
        envelopeOf({ id, type, createdAt, workspaceId: input.workspaceId, isTest, data })
      )
      const insertEvent = sql`
        INSERT INTO events (id, workspace_id, type, object_id, envelope, is_test, created_at)
        VALUES (${id}, ${input.workspaceId}, ${type}, ${input.event.data.object_id}, ${envelope},
                ${isTest}, ${createdAt})`
      if (isTest) yield* insertEvent
      else {
        // the outbox fan-out: one pending delivery per subscribed endpoint that is not disabled
        // (paused endpoints keep theirs pending until resumed). The event row and the endpoint
        // lookup go in one statement; the deliveries in a second, with a wake-up of each active
        // endpoint that Postgres delivers only once this transaction commits
        const endpoints = yield* decodeSubscribers(
          yield* sql`WITH event AS (${insertEvent})
          SELECT id, status FROM webhook_endpoints
          WHERE workspace_id = ${input.workspaceId} AND deleted_at IS NULL AND status IN ('active', 'paused')
          AND (${type} = ANY(event_types) OR '*' = ANY(event_types))`
        )
        if (endpoints.length > 0) {
          const rows = []
          for (const endpoint of endpoints) {
            rows.push({
              id: yield* Ids.newId("whd"),
              endpoint_id: endpoint.id,
              workspace_id: input.workspaceId,
              event_id: id,
              event_type: type,
              status: "pending",
              next_attempt_at: createdAt,
              created_at: createdAt,
              updated_at: createdAt
            })
          }
          const active = endpoints.filter((e) => e.status === "active").map((e) => e.id)
          yield* sql`WITH inserted AS (INSERT INTO webhook_deliveries ${sql.insert(rows)})
            SELECT pg_notify(${WEBHOOK_WAKE_CHANNEL}, endpoint_id) FROM unnest(${active}::text[]) AS endpoint_id`
        }
      }
      return {
        id,
        type,
        workspace_id: input.workspaceId,
        created_at: createdAt,
        envelope
      } satisfies AppendedEvent
    }, dieOnDatabaseError)

    /**
     * The outbox write inside a larger statement (its common table expressions, to follow a comma):
     * the events `source` selects (columns id, workspace_id, type, object_id, envelope, created_at;
     * never test events), one pending delivery per subscribed endpoint that is not disabled, with
     * ids made by the statement (`ulid_random_part`, migration 0046) after the event id's time,
     * and a wake-up of each active endpoint that Postgres delivers at commit: what `append` does,
     * in no round trip of its own. The statement's final SELECT must read `outboxWoken` (a plain
     * SELECT in a WITH runs only when read).
     */
    const outboxCtes = (source: Statement.Fragment) =>
      sql`outbox_event AS (
          INSERT INTO events (id, workspace_id, type, object_id, envelope, is_test, created_at)
          SELECT id, workspace_id, type, object_id, envelope, false, created_at FROM (${source}) AS source
          RETURNING id, workspace_id, type, created_at
        ), outbox_delivery AS (
          INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, next_attempt_at,
            created_at, updated_at)
          SELECT 'whd_' || substr(ev.id, 5, 10) || ulid_random_part(), e.id, ev.workspace_id, ev.id, ev.type, 'pending',
            ev.created_at, ev.created_at, ev.created_at
          FROM outbox_event ev JOIN webhook_endpoints e ON e.workspace_id = ev.workspace_id AND e.deleted_at IS NULL
            AND e.status IN ('active', 'paused') AND (ev.type = ANY(e.event_types) OR '*' = ANY(e.event_types))
          RETURNING endpoint_id
        ), outbox_wake AS (
          SELECT pg_notify(${WEBHOOK_WAKE_CHANNEL}, e.id) FROM webhook_endpoints e
          WHERE e.status = 'active' AND e.id IN (SELECT endpoint_id FROM outbox_delivery)
        )`

    /**
     * An envelope template's text as an SQL expression: its parts around `values`, one SQL
     * expression per slot, each quoted as a JSON string by Postgres (`to_json`).
     */
    const envelopeSql = (template: EnvelopeTemplate, values: Record<string, Statement.Fragment>) => {
      const pieces: Array<Statement.Fragment> = [sql`${template.parts[0]!}::text`]
      template.slots.forEach((slot, i) => {
        pieces.push(sql`to_json(${values[slot]!})::text`, sql`${template.parts[i + 1]!}::text`)
      })
      return sql.join(" || ", true)(pieces)
    }

    /** What a statement with `outboxCtes` must select, so that its wake-ups are sent. */
    const outboxWoken = sql`(SELECT count(*) FROM outbox_wake)`

    return { append, outboxCtes, envelopeSql, outboxWoken } as const
  })
}) {}
