/**
 * Rows of the Baileys auth state of QR channels (table `qr_auth_state`, migration 0040): one row
 * per (channel, key type, key id), the creds as (channel, `creds`, ``). Values are opaque text:
 * Baileys' BufferJSON sealed with `SecretBox` (see `QrAuthState`, which seals and opens them), or
 * plaintext BufferJSON in rows written before that; this repository only moves rows.
 */
import { SqlClient } from "@effect/sql"
import { Rows } from "@switchboard/db"
import { SecretBox } from "@switchboard/infra"
import { Effect, Option } from "effect"

/** Key type of the creds row. */
export const CREDS_TYPE = "creds"

/** One change of a `keys.set` call; `value: null` deletes the key. */
export interface QrAuthKeyChange {
  readonly type: string
  readonly id: string
  readonly value: string | null
}

/** Identifies one row. */
export interface QrAuthRowKey {
  readonly channel_id: string
  readonly key_type: string
  readonly key_id: string
}

/** One row as stored. */
export interface QrAuthRow extends QrAuthRowKey {
  readonly value: string
}

/** Rows per upsert statement: 4 parameters each, far below Postgres' 65 535 limit. */
const CHUNK = 500

export class QrAuthStateRepo extends Effect.Service<QrAuthStateRepo>()("@switchboard/providers/QrAuthStateRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const readCreds = Effect.fn("QrAuthStateRepo.readCreds")(function*(channelId: string) {
      const rows = yield* sql<{ value: string }>`
        SELECT value FROM qr_auth_state WHERE channel_id = ${channelId} AND key_type = ${CREDS_TYPE} AND key_id = ''`
      return Option.map(Option.fromNullable(rows[0]), (r) => r.value)
    }, Effect.orDie)

    const writeCreds = Effect.fn("QrAuthStateRepo.writeCreds")(function*(channelId: string, value: string) {
      yield* sql`
        INSERT INTO qr_auth_state (channel_id, key_type, key_id, value, updated_at)
        VALUES (${channelId}, ${CREDS_TYPE}, '', ${value}, now())
        ON CONFLICT (channel_id, key_type, key_id) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`
    }, Rows.dieOnDatabaseError)

    const readKeys = Effect.fn("QrAuthStateRepo.readKeys")(
      function*(channelId: string, type: string, ids: ReadonlyArray<string>) {
        if (ids.length === 0) return []
        return yield* sql<{ key_id: string; value: string }>`
        SELECT key_id, value FROM qr_auth_state
        WHERE channel_id = ${channelId} AND key_type = ${type} AND key_id IN ${sql.in(ids)}`
      },
      Effect.orDie
    )

    /** Every key row of the channel (all but the creds): what a link loads to hold its keys in memory. */
    const readAllKeys = Effect.fn("QrAuthStateRepo.readAllKeys")(function*(channelId: string) {
      return yield* sql<{ key_type: string; key_id: string; value: string }>`
        SELECT key_type, key_id, value FROM qr_auth_state
        WHERE channel_id = ${channelId} AND key_type <> ${CREDS_TYPE}`
    }, Effect.orDie)

    /** All changes of one `keys.set` in ONE transaction: either all are durable or none. */
    const writeKeys = Effect.fn("QrAuthStateRepo.writeKeys")(
      function*(channelId: string, changes: ReadonlyArray<QrAuthKeyChange>) {
        const upserts = changes.filter((c): c is QrAuthKeyChange & { value: string } => c.value !== null)
        const deletes = changes.filter((c) => c.value === null)
        yield* Effect.gen(function*() {
          for (const d of deletes) {
            yield* sql`DELETE FROM qr_auth_state WHERE channel_id = ${channelId} AND key_type = ${d.type} AND key_id = ${d.id}`
          }
          for (let i = 0; i < upserts.length; i += CHUNK) {
            const rows = upserts.slice(i, i + CHUNK).map((c) => ({
              channel_id: channelId,
              key_type: c.type,
              key_id: c.id,
              value: c.value
            }))
            yield* sql`
            INSERT INTO qr_auth_state ${sql.insert(rows)}
            ON CONFLICT (channel_id, key_type, key_id) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`
          }
        }).pipe(sql.withTransaction)
      },
      Rows.dieOnDatabaseError
    )

    /** Forgets the channel's link entirely (logout, unlinked from the phone). */
    const wipe = Effect.fn("QrAuthStateRepo.wipe")(function*(channelId: string) {
      yield* sql`DELETE FROM qr_auth_state WHERE channel_id = ${channelId}`
    }, Effect.orDie)

    /**
     * Rewrites the channel's values for which `reseal` returns a new one (plaintext written before
     * encryption, values sealed under a previous key), in one transaction; returns how many it
     * rewrote. `only: "plaintext"` reads just the values not in the `SecretBox` format (all that
     * can need it while no previous key is configured); `"all"` reads every value. A row rewritten
     * meanwhile is left alone (the update matches the old value only), so a newer value is never
     * overwritten.
     */
    const reseal = Effect.fn("QrAuthStateRepo.reseal")(
      function*(channelId: string, only: "plaintext" | "all", reseal: (value: string) => string | undefined) {
        return yield* Effect.gen(function*() {
          const rows = only === "plaintext"
            ? yield* sql<QrAuthRow>`
              SELECT channel_id, key_type, key_id, value FROM qr_auth_state
              WHERE channel_id = ${channelId} AND value NOT LIKE ${`${SecretBox.PREFIX}%`}`
            : yield* sql<QrAuthRow>`
              SELECT channel_id, key_type, key_id, value FROM qr_auth_state WHERE channel_id = ${channelId}`
          let rewritten = 0
          for (const r of rows) {
            const value = reseal(r.value)
            if (value !== undefined && (yield* replaceValue(r, value))) rewritten++
          }
          return rewritten
        }).pipe(sql.withTransaction)
      },
      Effect.orDie
    )

    /** Up to `limit` rows of every channel after `after` in key order (a scan of the whole table). */
    const scan = Effect.fn("QrAuthStateRepo.scan")(
      function*(after: Option.Option<QrAuthRowKey>, limit: number) {
        return yield* Option.match(after, {
          onNone: () =>
            sql<QrAuthRow>`
              SELECT channel_id, key_type, key_id, value FROM qr_auth_state
              ORDER BY channel_id, key_type, key_id LIMIT ${limit}`,
          onSome: (k) =>
            sql<QrAuthRow>`
              SELECT channel_id, key_type, key_id, value FROM qr_auth_state
              WHERE (channel_id, key_type, key_id) > (${k.channel_id}, ${k.key_type}, ${k.key_id})
              ORDER BY channel_id, key_type, key_id LIMIT ${limit}`
        })
      },
      Effect.orDie
    )

    /** The value of one row now, if it still exists. */
    const readValue = Effect.fn("QrAuthStateRepo.readValue")(function*(row: QrAuthRowKey) {
      const rows = yield* sql<{ value: string }>`
        SELECT value FROM qr_auth_state
        WHERE channel_id = ${row.channel_id} AND key_type = ${row.key_type} AND key_id = ${row.key_id}`
      return Option.map(Option.fromNullable(rows[0]), (r) => r.value)
    }, Effect.orDie)

    /** Compare-and-set: writes `value` only while the row still holds `row.value`; whether it did. */
    const replaceValue = Effect.fn("QrAuthStateRepo.replaceValue")(function*(row: QrAuthRow, value: string) {
      const updated = yield* sql<{ key_id: string }>`
        UPDATE qr_auth_state SET value = ${value}, updated_at = now()
        WHERE channel_id = ${row.channel_id} AND key_type = ${row.key_type} AND key_id = ${row.key_id}
          AND value = ${row.value}
        RETURNING key_id`
      return updated.length > 0
    }, Effect.orDie)

    /** Rows stored for the channel, by key type (operations and tests). */
    const countByType = Effect.fn("QrAuthStateRepo.countByType")(function*(channelId: string) {
      const rows = yield* sql<{ key_type: string; n: string | number }>`
        SELECT key_type, count(*) AS n FROM qr_auth_state WHERE channel_id = ${channelId} GROUP BY key_type`
      return Object.fromEntries(rows.map((r) => [r.key_type, Number(r.n)])) as Record<string, number>
    }, Effect.orDie)

    return {
      readCreds,
      writeCreds,
      readKeys,
      readAllKeys,
      writeKeys,
      reseal,
      scan,
      readValue,
      replaceValue,
      wipe,
      countByType
    } as const
  })
}) {}
