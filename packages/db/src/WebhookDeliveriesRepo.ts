/**
 * Webhook deliveries: the delivery queue (`pending` rows with `next_attempt_at`) and their attempts.
 * Their rows and what they decode to are in `rows/WebhookDeliveryRows.ts`.
 * Over 350 lines on purpose: every statement of `webhook_deliveries`, each with the 30-day window
 * it carries (`retainedIn`), in one place (one repo per table).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Ids, type Pagination, Webhooks } from "@switchboard/domain"
import { Clock, Effect, Option, Schema } from "effect"
import * as Partitions from "./Partitions.js"
import { dieOnDatabaseError } from "./Rows.js"
import {
  AttemptColumns,
  type ClaimedDelivery,
  type ClaimRequest,
  decodeClaim,
  decodeClaimed,
  decodeDeliveries,
  decodeDelivery,
  decodeDeliveryIds,
  decodeDue,
  decodeEndpointIds,
  DeliveryColumns,
  type DeliverySuccess,
  ReplayedRow,
  toClaimedDelivery
} from "./rows/WebhookDeliveryRows.js"

export type { ClaimedDelivery, ClaimRequest, DeliverySuccess, DueDelivery } from "./rows/WebhookDeliveryRows.js"

/**
 * The ids reads and pulls see at `now` (ms): made within the 30-day retention (docs/WEBHOOKS.md), up to
 * `Partitions.CLOCK_SLACK_MS` ahead; every statement but a lookup by id carries them (partition pruning).
 */
export const retained = (now: number) => Partitions.idWindow("whd", now - Webhooks.DELIVERY_RETENTION_MS, now)

/**
 * `column` (a delivery id) within `retained` for the times from `earliest` to `latest` (epoch ms),
 * as a statement carries it: the window's months as constants (`Partitions.inWindow`, to the day),
 * so the statement reads only their partitions whatever plan it runs (a prepared statement's
 * generic plan read `id >= $1 AND id < $2` as a range of a few rows, its default for unknown
 * bounds, and could walk the primary key instead of the endpoint's due index), and the retention
 * to the millisecond as the id's time part (its first characters, an `Ids.idFloor`) against a
 * parameter: a second range on the id itself would be taken for such a narrow range again.
 */
const retainedIn = (sql: SqlClient.SqlClient, column: string, earliest: number, latest: number) => {
  const exact = retained(earliest).lower
  const months = Partitions.idWindow(
    "whd",
    Partitions.dayFloor(earliest - Webhooks.DELIVERY_RETENTION_MS),
    Partitions.dayCeil(latest)
  )
  return sql`${Partitions.inWindow(sql, column, months)}
    AND left(${sql.literal(column)}, ${sql.literal(String(exact.length))}) >= ${exact}`
}

export class WebhookDeliveriesRepo
  extends Effect.Service<WebhookDeliveriesRepo>()("@switchboard/db/WebhookDeliveriesRepo", {
    effect: Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const insert = Effect.fn("WebhookDeliveriesRepo.insert")(function*(input: {
        readonly endpointId: string
        readonly workspaceId: string
        readonly eventId: string
        readonly eventType: string
        readonly isTest: boolean
        readonly replayOf: string | null
        readonly now: string
      }) {
        const id = yield* Ids.newId("whd")
        yield* sql`INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, next_attempt_at,
          replay_of, is_test, created_at, updated_at)
        VALUES (${id}, ${input.endpointId}, ${input.workspaceId}, ${input.eventId}, ${input.eventType}, 'pending', ${input.now},
          ${input.replayOf}, ${input.isTest}, ${input.now}, ${input.now})`
        return id
      }, dieOnDatabaseError)

      const delivery = SqlSchema.findOne({
        Request: Schema.Struct({ workspaceId: Schema.String, id: Schema.String, now: Schema.Number }),
        Result: DeliveryColumns,
        execute: ({ id, now, workspaceId }) =>
          sql`SELECT * FROM webhook_deliveries WHERE workspace_id = ${workspaceId} AND id = ${id}
            AND ${retainedIn(sql, "id", now, now)}`
      })
      const attemptsOf = SqlSchema.findAll({
        Request: Schema.Array(Schema.String),
        Result: AttemptColumns,
        execute: (ids) => sql`SELECT * FROM webhook_attempts WHERE delivery_id IN ${sql.in(ids)} ORDER BY attempt`
      })
      const deliveries = SqlSchema.findAll({
        Request: Schema.Struct({
          workspaceId: Schema.String,
          endpointId: Schema.UndefinedOr(Schema.String),
          status: Schema.UndefinedOr(Webhooks.DeliveryStatus),
          limit: Schema.Number,
          after: Schema.UndefinedOr(Schema.Struct({ created_at: Schema.String, id: Schema.String })),
          now: Schema.Number
        }),
        Result: DeliveryColumns,
        execute: ({ after, endpointId, limit, now, status, workspaceId }) =>
          sql`SELECT * FROM webhook_deliveries WHERE workspace_id = ${workspaceId}
        AND ${retainedIn(sql, "id", now, now)}
        ${endpointId ? sql`AND endpoint_id = ${endpointId}` : sql``}
        ${status ? sql`AND status = ${status}` : sql``}
        ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
      })

      const find = Effect.fn("WebhookDeliveriesRepo.find")(function*(workspaceId: string, id: string) {
        const row = yield* delivery({ workspaceId, id, now: yield* Clock.currentTimeMillis })
        if (Option.isNone(row)) return Option.none<Webhooks.WebhookDelivery>()
        const attempts = yield* attemptsOf([id])
        return Option.some(yield* decodeDelivery({ ...row.value, attempts }))
      }, dieOnDatabaseError)

      const list = Effect.fn("WebhookDeliveriesRepo.list")(function*(
        workspaceId: string,
        filters: { readonly endpointId?: string | undefined; readonly status?: Webhooks.DeliveryStatus | undefined },
        limit: number,
        after: Pagination.CursorPosition | undefined
      ) {
        const rows = yield* deliveries({
          workspaceId,
          endpointId: filters.endpointId,
          status: filters.status,
          limit,
          after: after === undefined ? undefined : { created_at: after.created_at, id: after.id },
          now: yield* Clock.currentTimeMillis
        })
        const ids = rows.map((r) => r.id)
        const attempts = ids.length === 0 ? [] : yield* attemptsOf(ids)
        return yield* decodeDeliveries(
          rows.map((r) => ({ ...r, attempts: attempts.filter((a) => a.delivery_id === r.id) }))
        )
      }, dieOnDatabaseError)

      /** Due deliveries of an endpoint that may be sent (not paused), oldest first. */
      const due = Effect.fn("WebhookDeliveriesRepo.due")(function*(endpointId: string, now: string, limit: number) {
        return yield* decodeDue(
          yield* sql`SELECT d.id, d.event_id, d.event_type FROM webhook_deliveries d
        JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.endpoint_id = ${endpointId} AND d.status = 'pending' AND d.next_attempt_at <= ${now}
          AND ${retainedIn(sql, "d.id", Date.parse(now), Date.parse(now))}
          AND NOT (e.status = 'paused' AND e.deleted_at IS NULL)
        ORDER BY d.next_attempt_at, d.created_at LIMIT ${limit}`
        )
      }, dieOnDatabaseError)

      /** Takes a pending delivery for one attempt; returns its attempt number, or none if taken. */
      const claim = Effect.fn("WebhookDeliveriesRepo.claim")(function*(id: string, now: string) {
        const rows = yield* decodeClaim(
          yield* sql`WITH target AS (
          SELECT id, event_id FROM webhook_deliveries WHERE id = ${id} AND status = 'pending' FOR UPDATE
        )
        UPDATE webhook_deliveries d
        SET status = 'delivering', attempt_count = attempt_count + 1, updated_at = ${now}
        FROM target t CROSS JOIN LATERAL (SELECT e.envelope FROM events e WHERE e.id = t.event_id OFFSET 0) ev
        WHERE d.id = ${id} AND d.id = t.id
        RETURNING d.attempt_count, ev.envelope`
        )
        return Option.fromNullable(rows[0])
      }, dieOnDatabaseError)

      /** One statement of `claimDueMany`: each endpoint at most once (see there). */
      const claimDueOnce = (requests: ReadonlyArray<ClaimRequest>) => {
        const nows = requests.map((r) => Date.parse(r.now))
        const window = (column: string) => retainedIn(sql, column, Math.min(...nows), Math.max(...nows))
        // on every webhook attempt: the columns the sender reads, decoded
        return Effect.flatMap(
          sql`WITH request AS (
          SELECT * FROM unnest(${requests.map((r) => r.endpointId)}::text[], ${
            requests.map((r) => r.now)
          }::timestamptz[],
            ${requests.map((r) => r.limit)}::int[], ${requests.map((r) => r.lease?.shardId ?? null)}::text[],
            ${requests.map((r) => r.lease?.address ?? null)}::text[],
            ${requests.map((r) => r.lease?.expirySeconds ?? null)}::int[]) AS r(endpoint_id, now, lim, shard_id,
            address, expiry)
        ), due AS (
          SELECT due.id, due.event_id, r.now FROM request r CROSS JOIN LATERAL (
            SELECT d.id, d.event_id FROM webhook_deliveries d
            JOIN webhook_endpoints e ON e.id = d.endpoint_id
            WHERE d.endpoint_id = r.endpoint_id AND d.status = 'pending' AND d.next_attempt_at <= r.now
              AND ${window("d.id")}
              AND NOT (e.status = 'paused' AND e.deleted_at IS NULL)${
            // (the lease table exists only where runners hold row-based shard locks: never named otherwise)
            requests.some((r) => r.lease !== undefined)
              ? sql`
              AND (r.shard_id IS NULL OR EXISTS (SELECT 1 FROM cluster_locks lease WHERE lease.shard_id = r.shard_id
                AND lease.address = r.address AND lease.acquired_at >= NOW() - make_interval(secs => r.expiry)
                FOR SHARE))`
              : sql``}
            ORDER BY d.next_attempt_at, d.created_at LIMIT r.lim
            FOR UPDATE OF d SKIP LOCKED
          ) due
        ), claimed AS (
          UPDATE webhook_deliveries d SET status = 'delivering', attempt_count = attempt_count + 1, updated_at = due.now
          -- each event by one lookup, never a join over every month of events (a generic plan's)
          FROM due CROSS JOIN LATERAL (SELECT e.envelope FROM events e WHERE e.id = due.event_id OFFSET 0) ev
          WHERE d.id = due.id AND ${window("d.id")}
          RETURNING d.id, d.endpoint_id, d.event_id, d.event_type, d.attempt_count, d.next_attempt_at, d.created_at,
            ev.envelope
        )
        SELECT c.id, c.endpoint_id, c.event_id, c.event_type, c.attempt_count, c.envelope, c.created_at, w.url, w.status,
          w.deleted_at, w.secret_sealed, w.previous_secret_sealed, w.previous_secret_expires_at
        FROM claimed c JOIN webhook_endpoints w ON w.id = c.endpoint_id
        ORDER BY c.endpoint_id, c.next_attempt_at, c.created_at`,
          decodeClaimed
        )
      }

      /**
       * Takes due deliveries of several endpoints for one attempt each, in one statement
       * (`WebhookDeliveryBatches` gathers the calls): for each request the endpoint's due
       * deliveries that may be sent (not paused), oldest first, at most `limit`, with the event's
       * envelope and the endpoint's row; a delivery another transaction holds right now is left
       * for the next pull. The answer has each request's deliveries, in the requests' order. An
       * endpoint asked for twice is served by a second statement (never claimed for twice at once).
       */
      const claimDueMany = Effect.fn("WebhookDeliveriesRepo.claimDueMany")(
        function*(requests: ReadonlyArray<ClaimRequest>) {
          const answers: Array<Array<ClaimedDelivery>> = requests.map(() => [])
          let left = requests.map((request, index) => ({ request, index }))
          while (left.length > 0) {
            const seen = new Set<string>()
            const now: typeof left = []
            const later: typeof left = []
            for (const entry of left) {
              if (seen.has(entry.request.endpointId)) later.push(entry)
              else {
                seen.add(entry.request.endpointId)
                now.push(entry)
              }
            }
            const rows = yield* claimDueOnce(now.map((e) => e.request))
            const byEndpoint = new Map(now.map((e) => [e.request.endpointId, answers[e.index]!]))
            for (const row of rows) byEndpoint.get(row.endpoint_id)?.push(toClaimedDelivery(row))
            left = later
          }
          return answers
        },
        dieOnDatabaseError
      )

      /**
       * Records an attempt and the delivery's next state (one transaction with the counter), only
       * while the delivery is still `delivering` in THIS attempt: an attempt that outlived the
       * stuck limit was handed out again, and its late result must not overwrite the newer one.
       * Returns whether it was recorded (the caller counts the outcome only then).
       */
      const record = Effect.fn("WebhookDeliveriesRepo.record")(function*(input: {
        readonly id: string
        readonly attempt: number
        readonly at: string
        readonly responseStatus: number | null
        readonly reason: Webhooks.FailureReason
        readonly latencyMs: number | null
        readonly next: { readonly status: Webhooks.DeliveryStatus; readonly nextAttemptAt: string | null }
      }) {
        const updated = yield* sql`UPDATE webhook_deliveries SET status = ${input.next.status},
          next_attempt_at = ${input.next.nextAttemptAt}, response_status = ${input.responseStatus},
          failure_reason = ${input.reason}, latency_ms = ${input.latencyMs}, updated_at = ${input.at}
        WHERE id = ${input.id} AND status = 'delivering' AND attempt_count = ${input.attempt} RETURNING id`
        if (updated.length === 0) return false
        yield* sql`INSERT INTO webhook_attempts (delivery_id, attempt, at, response_status, failure_reason, latency_ms)
        VALUES (${input.id}, ${input.attempt}, ${input.at}, ${input.responseStatus}, ${input.reason}, ${input.latencyMs})`
        return true
      }, dieOnDatabaseError)

      /**
       * Records successful attempts (any endpoints) as ONE statement: each
       * delivery is recorded only while it is still `delivering` in its attempt (the same guard
       * as `record`), with its own attempt row; each endpoint with a recorded delivery gets its
       * consecutive-failure counter reset. Rows are locked in id order. Returns the ids recorded.
       * One statement: never inside a caller's transaction (`WebhookSuccesses` batches the calls).
       */
      const recordSuccesses = Effect.fn("WebhookDeliveriesRepo.recordSuccesses")(function*(
        inputs: ReadonlyArray<DeliverySuccess>
      ) {
        if (inputs.length === 0) return new Set<string>()
        const sorted = [...inputs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        const rows = yield* decodeDeliveryIds(
          yield* sql`WITH input AS (
          SELECT * FROM unnest(${sorted.map((i) => i.id)}::text[], ${sorted.map((i) => i.endpointId)}::text[],
            ${sorted.map((i) => i.attempt)}::int[], ${sorted.map((i) => i.at)}::timestamptz[],
            ${sorted.map((i) => i.responseStatus)}::int[], ${sorted.map((i) => i.latencyMs)}::int[])
            AS i(id, endpoint_id, attempt, at, response_status, latency_ms)
        ), updated AS (
          UPDATE webhook_deliveries d SET status = 'succeeded', next_attempt_at = NULL,
            response_status = i.response_status, failure_reason = 'ok', latency_ms = i.latency_ms, updated_at = i.at
          FROM input i
          WHERE d.id = i.id AND d.status = 'delivering' AND d.attempt_count = i.attempt
            AND d.id >= ${sorted[0]!.id} AND d.id <= ${sorted.at(-1)!.id}
          RETURNING d.id, d.endpoint_id, i.attempt, i.at, i.response_status, i.latency_ms
        ), attempt AS (
          INSERT INTO webhook_attempts (delivery_id, attempt, at, response_status, failure_reason, latency_ms)
          SELECT id, attempt, at, response_status, 'ok', latency_ms FROM updated
        ), reset AS (
          UPDATE webhook_endpoints SET consecutive_failures = 0
          WHERE id IN (SELECT endpoint_id FROM updated) AND consecutive_failures <> 0
        )
        SELECT id FROM updated`
        )
        return new Set(rows.map((r) => r.id))
      }, dieOnDatabaseError)

      /** Replay: only from failed or dead; bumps the original's replay_count. */
      const markReplayed = Effect.fn("WebhookDeliveriesRepo.markReplayed")(
        function*(workspaceId: string, id: string, now: string) {
          return yield* SqlSchema.findOne({
            Request: Schema.Void,
            Result: ReplayedRow,
            execute: () =>
              sql`UPDATE webhook_deliveries
                SET replay_count = replay_count + 1, updated_at = ${now}
                WHERE workspace_id = ${workspaceId} AND id = ${id} AND status IN ('failed', 'dead')
                  AND ${retainedIn(sql, "id", Date.parse(now), Date.parse(now))}
                RETURNING endpoint_id, event_id, event_type`
          })(undefined)
        },
        dieOnDatabaseError
      )

      /**
       * Endpoints with due deliveries that `due` would hand out (for the sweeper), the longest
       * waiting first. Paused endpoints are left out: their held deliveries would otherwise take
       * wake-up slots every second (starving active endpoints) and keep them from passivating.
       */
      const endpointsWithDueWork = Effect.fn("WebhookDeliveriesRepo.endpointsWithDueWork")(
        function*(now: string, limit: number) {
          const rows = yield* decodeEndpointIds(
            yield* sql`SELECT d.endpoint_id FROM webhook_deliveries d
        JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.status = 'pending' AND d.next_attempt_at <= ${now}
          AND ${retainedIn(sql, "d.id", Date.parse(now), Date.parse(now))}
          AND NOT (e.status = 'paused' AND e.deleted_at IS NULL)
        GROUP BY d.endpoint_id ORDER BY min(d.next_attempt_at), d.endpoint_id LIMIT ${limit}`
          )
          return rows.map((r) => r.endpoint_id)
        },
        dieOnDatabaseError
      )

      /** Deliveries left `delivering` by a dead runner go back to pending. */
      const requeueStuck = Effect.fn("WebhookDeliveriesRepo.requeueStuck")(function*(cutoff: string, now: string) {
        const rows =
          yield* sql`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ${now}, updated_at = ${now}
        WHERE status = 'delivering' AND updated_at < ${cutoff}
          AND ${retainedIn(sql, "id", Date.parse(now), Date.parse(now))} RETURNING id`
        // how many were returned to the queue (metrics)
        return rows.length
      }, dieOnDatabaseError)

      return {
        insert,
        find,
        list,
        due,
        claim,
        claimDueMany,
        record,
        recordSuccesses,
        markReplayed,
        endpointsWithDueWork,
        requeueStuck
      } as const
    })
  })
{}
