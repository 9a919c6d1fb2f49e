/** API keys, looked up by the keyed hash of their secret. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Identity, Ids, type Pagination, Scopes } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { CountRow, dieOnDatabaseError, iso, isoOrNull, TimestampColumn } from "./Rows.js"

export interface ApiKeyRow {
  readonly id: Identity.ApiKey["id"]
  readonly workspace_id: `ws_${string}`
  readonly name: string
  readonly mode: Identity.KeyMode
  readonly last4: string
  readonly scopes: ReadonlyArray<Scopes.Scope>
  readonly expires_at: string | null
  readonly created_at: string
  readonly last_used_at: string | null
  readonly revoked_at: string | null
}

export interface ApiKeyAuthRow extends ApiKeyRow {
  readonly secret_hash: string
  readonly workspace_status: "active" | "suspended"
}

/** A row of `api_keys`. */
const ApiKeyColumns = Schema.Struct({
  id: Ids.Id("key"),
  workspace_id: Ids.Id("ws"),
  name: Schema.String,
  mode: Identity.KeyMode,
  secret_hash: Schema.String,
  last4: Schema.String,
  scopes: Schema.Array(Scopes.Scope),
  expires_at: Schema.NullOr(TimestampColumn),
  created_at: TimestampColumn,
  last_used_at: Schema.NullOr(TimestampColumn),
  revoked_at: Schema.NullOr(TimestampColumn)
})
type ApiKeyColumns = typeof ApiKeyColumns.Type

/**
 * A row of `api_keys` decoded to the domain's `ApiKey`: the one shape of the resource
 * (docs/ARCHITECTURE.md "Adding a resource"). The id is checked and typed (`key_...`) while
 * decoding, the timestamps become the wire's ISO strings (the secret's hash and the workspace
 * are not the resource's); no mapper, no cast.
 */
export const ApiKeyResource = Schema.transform(
  ApiKeyColumns.pipe(Schema.omit("secret_hash", "workspace_id")),
  Identity.ApiKey,
  {
    strict: true,
    decode: (row) => ({
      ...row,
      object: "api_key" as const,
      prefix: row.mode === "test" ? "wa_test" as const : "wa_live" as const,
      expires_at: isoOrNull(row.expires_at),
      created_at: iso(row.created_at),
      last_used_at: isoOrNull(row.last_used_at),
      revoked_at: isoOrNull(row.revoked_at)
    }),
    encode: ({ object: _, prefix: __, ...key }) => key
  }
)
const decodeKeys = Schema.decodeUnknown(Schema.Array(ApiKeyResource))

/** The auth read's row (`findBySecretHash`): the key's columns and its workspace's status. */
const AuthColumns = Schema.Struct({ ...ApiKeyColumns.fields, workspace_status: Schema.Literal("active", "suspended") })
const decodeAuth = Schema.decodeUnknown(Schema.Array(AuthColumns))

/** The auth read's row as the principal's `ApiKeyRow` (timestamps as ISO strings). */
const toRow = (r: ApiKeyColumns): ApiKeyRow => ({
  id: r.id,
  workspace_id: r.workspace_id,
  name: r.name,
  mode: r.mode,
  last4: r.last4,
  scopes: r.scopes,
  expires_at: isoOrNull(r.expires_at),
  created_at: iso(r.created_at),
  last_used_at: isoOrNull(r.last_used_at),
  revoked_at: isoOrNull(r.revoked_at)
})

export class ApiKeysRepo extends Effect.Service<ApiKeysRepo>()("@switchboard/db/ApiKeysRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Answers the key as stored. */
    const insert = Effect.fn("ApiKeysRepo.insert")(
      function*(row: ApiKeyRow & { readonly secret_hash: string; readonly created_by: string | null }) {
        const rows =
          yield* sql`INSERT INTO api_keys (id, workspace_id, name, mode, secret_hash, last4, scopes, expires_at, created_by, created_at)
        VALUES (${row.id}, ${row.workspace_id}, ${row.name}, ${row.mode}, ${row.secret_hash}, ${row.last4},
                ${row.scopes as Array<string>}, ${row.expires_at}, ${row.created_by}, ${row.created_at})
        RETURNING *`
        return (yield* decodeKeys(rows))[0]!
      },
      dieOnDatabaseError
    )

    const findBySecretHash = Effect.fn("ApiKeysRepo.findBySecretHash")(function*(secretHash: string) {
      // read by every request with an API key that misses the cache (bench/RESULTS.md 1, "The API key
      // cache on the ladder"): one row, its columns checked once
      const rows = yield* decodeAuth(
        yield* sql`SELECT k.*, w.status AS workspace_status FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
        WHERE k.secret_hash = ${secretHash}`
      )
      return Option.map(Option.fromNullable(rows[0]), (r): ApiKeyAuthRow => ({
        ...toRow(r),
        secret_hash: r.secret_hash,
        workspace_status: r.workspace_status
      }))
    }, dieOnDatabaseError)

    const page = SqlSchema.findAll({
      Request: Schema.Struct({
        workspaceId: Schema.String,
        limit: Schema.Number,
        after: Schema.UndefinedOr(Schema.Struct({ created_at: Schema.String, id: Schema.String }))
      }),
      Result: ApiKeyResource,
      execute: ({ after, limit, workspaceId }) =>
        after
          ? sql`SELECT * FROM api_keys WHERE workspace_id = ${workspaceId}
            AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})
            ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
          : sql`SELECT * FROM api_keys WHERE workspace_id = ${workspaceId}
            ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
    })
    const revoked = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, id: Schema.String, now: Schema.String }),
      Result: ApiKeyResource,
      execute: ({ id, now, workspaceId }) =>
        sql`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${now})
        WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING *`
    })
    const active = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, now: Schema.String }),
      Result: CountRow,
      execute: ({ now, workspaceId }) =>
        sql`SELECT count(*)::int AS n FROM api_keys
        WHERE workspace_id = ${workspaceId} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${now})`
    })

    /** Newest first; `limit + 1` rows so the caller can tell whether there is more. */
    const list = Effect.fn("ApiKeysRepo.list")(
      function*(workspaceId: string, limit: number, after: Pagination.CursorPosition | undefined) {
        return yield* page({
          workspaceId,
          limit,
          after: after === undefined ? undefined : { created_at: after.created_at, id: after.id }
        })
      },
      dieOnDatabaseError
    )

    const findOne = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, id: Schema.String }),
      Result: ApiKeyResource,
      execute: ({ id, workspaceId }) => sql`SELECT * FROM api_keys WHERE workspace_id = ${workspaceId} AND id = ${id}`
    })

    const find = Effect.fn("ApiKeysRepo.find")(function*(workspaceId: string, id: string) {
      return yield* findOne({ workspaceId, id })
    }, dieOnDatabaseError)

    /** Revokes once; a repeated revoke returns the original `revoked_at`. */
    const revoke = Effect.fn("ApiKeysRepo.revoke")(function*(workspaceId: string, id: string, now: string) {
      return yield* revoked({ workspaceId, id, now })
    }, dieOnDatabaseError)

    /** Records use, to the minute. */
    const touch = Effect.fn("ApiKeysRepo.touch")(function*(id: string, minute: string) {
      yield* sql`UPDATE api_keys SET last_used_at = ${minute}
        WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${minute})`
    }, dieOnDatabaseError)

    const countActive = Effect.fn("ApiKeysRepo.countActive")(function*(workspaceId: string, now: string) {
      return Option.match(yield* active({ workspaceId, now }), { onNone: () => 0, onSome: (row) => row.n })
    }, dieOnDatabaseError)

    return { insert, find, findBySecretHash, list, revoke, touch, countActive } as const
  })
}) {}
