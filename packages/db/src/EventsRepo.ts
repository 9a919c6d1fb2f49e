/**
 * Appends events to the outbox. Call `append` INSIDE the transaction that makes
 * the change it reports; the envelope is serialised once here and stored byte for byte.
 *
 * Fan-out to webhook deliveries (one row per subscribed, active endpoint) hooks in here too, so
 * every writer gets it by calling `append`, and so does the wake-up of those endpoints.
 */
import { SqlClient } from "@effect/sql"
import { newId, toTimestamp } from "@switchboard/domain"
import type { DomainEvent, EventType } from "@switchboard/domain"
import { Clock, Effect } from "effect"
import { dieOnDatabaseError } from "./Rows.js"

/**
 * The Postgres notification channel of new deliveries: its payload is the endpoint's id, sent at
 * commit (the webhook sweeper listens and wakes the endpoint; its poll stays the safety net).
 */
export const WEBHOOK_WAKE_CHANNEL = "webhook_deliveries_due"

export interface AppendedEvent {
  readonly id: string
  readonly type: EventType
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
      readonly event: DomainEvent
      /** when the event occurred; defaults to now */
      readonly occurredAt?: string
    }) {
      const id = yield* newId("evt")
      const createdAt = input.occurredAt ?? toTimestamp(yield* Clock.currentTimeMillis)
      const { isTest, type } = input.event
      const data = input.event.encodeData()
      const envelope = JSON.stringify({
        id,
        type,
        created_at: createdAt,
        workspace_id: input.workspaceId,
        ...(isTest ? { is_test: true } : {}),
        data
      })
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
        const endpoints = yield* sql<{ id: string; status: string }>`WITH event AS (${insertEvent})
          SELECT id, status FROM webhook_endpoints
          WHERE workspace_id = ${input.workspaceId} AND deleted_at IS NULL AND status IN ('active', 'paused')
          AND (${type} = ANY(event_types) OR '*' = ANY(event_types))`
        if (endpoints.length > 0) {
          const rows = []
          for (const endpoint of endpoints) {
            rows.push({
              id: yield* newId("whd"),
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

    return { append } as const
  })
}) {}
