/** Webhook endpoints; secrets are stored sealed (encrypted), never in clear. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Ids, type Pagination, Webhooks } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { CountRow, decodeRows, dieOnDatabaseError, iso, isoOrNull, TimestampColumn } from "./Rows.js"

/** The sealed secrets of one endpoint, as stored (operations: re-sealing under another key). */
/** An endpoint's sealed signing secrets (the current one and the one a rotation keeps for a while). */
const SealedSecretsRow = Schema.Struct({
  id: Ids.Id("wh"),
  secret_sealed: Schema.String,
  previous_secret_sealed: Schema.NullOr(Schema.String)
})
export interface SealedSecrets extends Schema.Schema.Type<typeof SealedSecretsRow> {}
const decodeSecrets = decodeRows(SealedSecretsRow)
const decodeCounts = decodeRows(CountRow)

/** The columns of a `webhook_endpoints` row. */
const EndpointColumns = Schema.Struct({
  id: Ids.Id("wh"),
  workspace_id: Ids.Id("ws"),
  url: Schema.String,
  event_types: Schema.Array(Schema.String),
  description: Schema.String,
  status: Webhooks.EndpointStatus,
  secret_sealed: Schema.String,
  secret_last4: Schema.String,
  previous_secret_sealed: Schema.NullOr(Schema.String),
  previous_secret_expires_at: Schema.NullOr(TimestampColumn),
  secret_rotated_at: Schema.NullOr(TimestampColumn),
  consecutive_failures: Schema.Number,
  created_at: TimestampColumn,
  updated_at: TimestampColumn,
  deleted_at: Schema.NullOr(TimestampColumn)
})

/** An endpoint's consecutive-failure counter and status (`Webhooks.afterFailedAttempt` decides them). */
const FailureCounterRow = Schema.Struct({
  status: Webhooks.EndpointStatus,
  consecutive_failures: Schema.Number
})

/**
 * A row of `webhook_endpoints` decoded to the domain's `WebhookEndpoint`, with what only the
 * platform sees (its workspace, its sealed secrets, whether it was deleted): the one shape of the
 * resource (docs/ARCHITECTURE.md "Adding a resource"). The ids are checked and typed (`wh_...`,
 * `ws_...`) while decoding, the timestamps become the wire's ISO strings; no mapper, no cast.
 */
export const EndpointRow = Schema.transform(
  EndpointColumns,
  Schema.Struct({
    endpoint: Webhooks.WebhookEndpoint,
    workspace_id: Ids.Id("ws"),
    secret_sealed: Schema.String,
    previous_secret_sealed: Schema.NullOr(Schema.String),
    previous_secret_expires_at: Schema.NullOr(Schema.String),
    secret_rotated_at: Schema.NullOr(Schema.String),
    deleted: Schema.Boolean
  }),
  {
    strict: true,
    decode: (
      {
        deleted_at,
        previous_secret_expires_at,
        previous_secret_sealed,
        secret_rotated_at,
        secret_sealed,
        workspace_id,
        ...row
      }
    ) => ({
      endpoint: {
        ...row,
        object: "webhook_endpoint" as const,
        created_at: iso(row.created_at),
        updated_at: iso(row.updated_at)
      },
      workspace_id,
      secret_sealed,
      previous_secret_sealed,
      previous_secret_expires_at: isoOrNull(previous_secret_expires_at),
      secret_rotated_at: isoOrNull(secret_rotated_at),
      // when it was deleted is not kept here: whether it was is what readers ask
      deleted: deleted_at !== null
    }),
    encode: ({ deleted, endpoint: { object: _, ...endpoint }, ...row }) => ({
      ...endpoint,
      ...row,
      // `softDelete` sets both: a deleted row's `updated_at` is when it was deleted
      deleted_at: deleted ? endpoint.updated_at : null
    })
  }
)
export type EndpointRow = typeof EndpointRow.Type
const decodeEndpoints = Schema.decodeUnknown(Schema.Array(EndpointRow))

export class WebhookEndpointsRepo
  extends Effect.Service<WebhookEndpointsRepo>()("@switchboard/db/WebhookEndpointsRepo", {
    effect: Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const insert = Effect.fn("WebhookEndpointsRepo.insert")(function*(input: {
        readonly id: string
        readonly workspaceId: string
        readonly url: string
        readonly eventTypes: ReadonlyArray<string>
        readonly description: string
        readonly secretSealed: string
        readonly secretLast4: string
        readonly now: string
      }) {
        yield* sql`INSERT INTO webhook_endpoints (id, workspace_id, url, event_types, description, status, secret_sealed,
          secret_last4, created_at, updated_at)
        VALUES (${input.id}, ${input.workspaceId}, ${input.url}, ${input.eventTypes as Array<
          string
        >}, ${input.description},
          'active', ${input.secretSealed}, ${input.secretLast4}, ${input.now}, ${input.now})`
      }, dieOnDatabaseError)

      const find = Effect.fn("WebhookEndpointsRepo.find")(function*(workspaceId: string, id: string) {
        const rows = yield* decodeEndpoints(
          yield* sql`SELECT * FROM webhook_endpoints WHERE workspace_id = ${workspaceId} AND id = ${id} AND deleted_at IS NULL`
        )
        return Option.fromNullable(rows[0])
      }, dieOnDatabaseError)

      /** Any workspace, deleted ones included (the delivering entity needs to know). */
      const findById = Effect.fn("WebhookEndpointsRepo.findById")(function*(id: string) {
        const rows = yield* decodeEndpoints(yield* sql`SELECT * FROM webhook_endpoints WHERE id = ${id}`)
        return Option.fromNullable(rows[0])
      }, dieOnDatabaseError)

      const list = Effect.fn("WebhookEndpointsRepo.list")(
        function*(workspaceId: string, limit: number, after: Pagination.CursorPosition | undefined) {
          const rows = yield* decodeEndpoints(
            yield* sql`SELECT * FROM webhook_endpoints WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL
        ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
          )
          return rows.map((r) => r.endpoint)
        },
        dieOnDatabaseError
      )

      const count = Effect.fn("WebhookEndpointsRepo.count")(function*(workspaceId: string) {
        const rows = yield* decodeCounts(
          yield* sql`SELECT count(*)::int AS n FROM webhook_endpoints WHERE workspace_id = ${workspaceId}
          AND deleted_at IS NULL`
        )
        return rows[0]?.n ?? 0
      }, dieOnDatabaseError)

      const update = Effect.fn("WebhookEndpointsRepo.update")(function*(workspaceId: string, id: string, changes: {
        readonly url?: string | undefined
        readonly eventTypes?: ReadonlyArray<string> | undefined
        readonly description?: string | undefined
        readonly status?: "active" | "paused" | undefined
        /** the update applies only to an endpoint in one of these statuses */
        readonly fromStatuses?: ReadonlyArray<string> | undefined
      }, now: string) {
        const rows = yield* sql`UPDATE webhook_endpoints SET
          url = COALESCE(${changes.url ?? null}, url),
          event_types = COALESCE(${(changes.eventTypes as Array<string> | undefined) ?? null}::text[], event_types),
          description = COALESCE(${changes.description ?? null}, description),
          status = COALESCE(${changes.status ?? null}, status),
          consecutive_failures = CASE WHEN ${changes.status === "active"} THEN 0 ELSE consecutive_failures END,
          updated_at = ${now}
        WHERE workspace_id = ${workspaceId} AND id = ${id} AND deleted_at IS NULL
        ${
          changes.fromStatuses
            ? sql`AND status = ANY(${changes.fromStatuses as Array<string>}::text[])`
            : sql``
        } RETURNING *`
        return Option.fromNullable((yield* decodeEndpoints(rows))[0])
      }, dieOnDatabaseError)

      const softDelete = Effect.fn("WebhookEndpointsRepo.softDelete")(
        function*(workspaceId: string, id: string, now: string) {
          const rows = yield* sql`UPDATE webhook_endpoints SET deleted_at = ${now}, updated_at = ${now}
        WHERE workspace_id = ${workspaceId} AND id = ${id} AND deleted_at IS NULL RETURNING id`
          return rows.length > 0
        },
        dieOnDatabaseError
      )

      const rotate = Effect.fn("WebhookEndpointsRepo.rotate")(function*(input: {
        readonly workspaceId: string
        readonly id: string
        readonly secretSealed: string
        readonly secretLast4: string
        readonly previousExpiresAt: string
        readonly now: string
      }) {
        const rows = yield* sql`UPDATE webhook_endpoints SET
          previous_secret_sealed = secret_sealed,
          previous_secret_expires_at = ${input.previousExpiresAt},
          secret_sealed = ${input.secretSealed},
          secret_last4 = ${input.secretLast4},
          secret_rotated_at = ${input.now},
          updated_at = ${input.now}
        WHERE workspace_id = ${input.workspaceId} AND id = ${input.id} AND deleted_at IS NULL RETURNING *`
        return Option.fromNullable((yield* decodeEndpoints(rows))[0])
      }, dieOnDatabaseError)

      /**
       * The endpoint's consecutive-failure counter, its row locked until the caller's transaction
       * ends (so concurrent attempts' failures are counted one after the other). `None`: no such
       * endpoint. What a failure makes of it is the domain's rule (`Webhooks.afterFailedAttempt`);
       * a success resets it with its delivery's record (`WebhookDeliveriesRepo.recordSuccesses`).
       */
      const lockFailureCounter = Effect.fn("WebhookEndpointsRepo.lockFailureCounter")(function*(id: string) {
        return yield* SqlSchema.findOne({
          Request: Schema.Void,
          Result: FailureCounterRow,
          execute: () => sql`SELECT status, consecutive_failures FROM webhook_endpoints WHERE id = ${id} FOR UPDATE`
        })(undefined)
      }, dieOnDatabaseError)

      /** Writes the counter (and the status it decided) of an endpoint locked by `lockFailureCounter`. */
      const setFailureCounter = Effect.fn("WebhookEndpointsRepo.setFailureCounter")(
        function*(id: string, counter: Webhooks.FailureCounter, now: string) {
          yield* sql`UPDATE webhook_endpoints SET consecutive_failures = ${counter.consecutive_failures},
            status = ${counter.status}, updated_at = ${now} WHERE id = ${id}`
        },
        dieOnDatabaseError
      )

      /** Up to `limit` endpoints after `after` in id order, deleted ones included: their sealed secrets. */
      const scanSecrets = Effect.fn("WebhookEndpointsRepo.scanSecrets")(
        function*(after: Option.Option<string>, limit: number) {
          return yield* decodeSecrets(
            yield* sql`SELECT id, secret_sealed, previous_secret_sealed FROM webhook_endpoints
              ${Option.match(after, { onNone: () => sql``, onSome: (id) => sql`WHERE id > ${id}` })}
              ORDER BY id LIMIT ${limit}`
          )
        },
        dieOnDatabaseError
      )

      const readSecrets = Effect.fn("WebhookEndpointsRepo.readSecrets")(function*(id: string) {
        const rows = yield* decodeSecrets(
          yield* sql`SELECT id, secret_sealed, previous_secret_sealed FROM webhook_endpoints WHERE id = ${id}`
        )
        return Option.fromNullable(rows[0])
      }, dieOnDatabaseError)

      /**
       * Compare-and-set of both sealed secrets: writes `next` only while the row still holds what
       * `read` saw (a rotation meanwhile is never undone); whether it did. Leaves `updated_at`:
       * the endpoint itself did not change.
       */
      const replaceSecrets = Effect.fn("WebhookEndpointsRepo.replaceSecrets")(
        function*(
          read: SealedSecrets,
          next: { readonly secret_sealed: string; readonly previous_secret_sealed: string | null }
        ) {
          const rows = yield* sql`UPDATE webhook_endpoints SET
            secret_sealed = ${next.secret_sealed},
            previous_secret_sealed = ${next.previous_secret_sealed}
          WHERE id = ${read.id} AND secret_sealed = ${read.secret_sealed}
            AND previous_secret_sealed IS NOT DISTINCT FROM ${read.previous_secret_sealed}
          RETURNING id`
          return rows.length > 0
        },
        dieOnDatabaseError
      )

      return {
        insert,
        find,
        findById,
        list,
        count,
        update,
        softDelete,
        rotate,
        lockFailureCounter,
        setFailureCounter,
        scanSecrets,
        readSecrets,
        replaceSecrets
      } as const
    })
  })
{}
