/**
 * Appends events to the outbox (ARCHITECTURE 3). Call `append` INSIDE the transaction that makes
 * the change it reports; the envelope is serialised once here and stored byte for byte.
 *
 * Fan-out to webhook deliveries (one row per subscribed, active endpoint) hooks in here too, so
 * every writer gets it by calling `append`.
 */
import { SqlClient } from "@effect/sql"
import { newId, toTimestamp } from "@switchboard/domain"
import type { EventType } from "@switchboard/domain"
import { Clock, Effect } from "effect"

export interface EventData {
  /** kind of thing, e.g. `message` */
  readonly object: string
  /** its public id */
  readonly object_id: string
  readonly [member: string]: unknown
}

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
      readonly type: EventType
      readonly data: EventData
      /** when the event occurred; defaults to now */
      readonly occurredAt?: string
      readonly isTest?: boolean
    }) {
      const id = yield* newId("evt")
      const createdAt = input.occurredAt ?? toTimestamp(yield* Clock.currentTimeMillis)
      const envelope = JSON.stringify({
        id,
        type: input.type,
        created_at: createdAt,
        workspace_id: input.workspaceId,
        ...(input.isTest ? { is_test: true } : {}),
        data: input.data
      })
      const insert = sql`INSERT INTO events (id, workspace_id, type, object_id, envelope, is_test, created_at)
        VALUES (${id}, ${input.workspaceId}, ${input.type}, ${input.data.object_id}, ${envelope},
                ${input.isTest ?? false}, ${createdAt})`
      if (input.isTest) {
        yield* insert
      } else {
        // the outbox fan-out: one pending delivery per subscribed endpoint that is not disabled
        // (paused endpoints keep theirs pending until resumed); the endpoints are read in the
        // statement that inserts the event (one round trip on every send)
        const endpoints = yield* sql<{ id: string }>`WITH event AS (${insert})
          SELECT id FROM webhook_endpoints
          WHERE workspace_id = ${input.workspaceId} AND deleted_at IS NULL AND status IN ('active', 'paused')
          AND (${input.type} = ANY(event_types) OR '*' = ANY(event_types))`
        for (const endpoint of endpoints) {
          const deliveryId = yield* newId("whd")
          yield* sql`INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status,
              next_attempt_at, created_at, updated_at)
            VALUES (${deliveryId}, ${endpoint.id}, ${input.workspaceId}, ${id}, ${input.type}, 'pending',
              ${createdAt}, ${createdAt}, ${createdAt})`
        }
      }
      return {
        id,
        type: input.type,
        workspace_id: input.workspaceId,
        created_at: createdAt,
        envelope
      } satisfies AppendedEvent
    }, Effect.orDie)

    return { append } as const
  })
}) {}
