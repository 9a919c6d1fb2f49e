/**
 * Rows of the Baileys auth state of QR channels (table `qr_auth_state`, migration 0040): one row
 * per (channel, key type, key id), the creds as (channel, `creds`, ``). Values are opaque text
 * (Baileys' BufferJSON, see `QrAuthState`); this repository only moves rows.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

/** Key type of the creds row. */
export const CREDS_TYPE = "creds"

/** One change of a `keys.set` call; `value: null` deletes the key. */
export interface QrAuthKeyChange {
  readonly type: string
  readonly id: string
  readonly value: string | null
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
    }, Effect.orDie)

    const readKeys = Effect.fn("QrAuthStateRepo.readKeys")(
      function*(channelId: string, type: string, ids: ReadonlyArray<string>) {
        if (ids.length === 0) return []
        return yield* sql<{ key_id: string; value: string }>`
        SELECT key_id, value FROM qr_auth_state
        WHERE channel_id = ${channelId} AND key_type = ${type} AND key_id IN ${sql.in(ids)}`
      },
      Effect.orDie
    )

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
      Effect.orDie
    )

    /** Forgets the channel's link entirely (logout, unlinked from the phone). */
    const wipe = Effect.fn("QrAuthStateRepo.wipe")(function*(channelId: string) {
      yield* sql`DELETE FROM qr_auth_state WHERE channel_id = ${channelId}`
    }, Effect.orDie)

    /** Rows stored for the channel, by key type (operations and tests). */
    const countByType = Effect.fn("QrAuthStateRepo.countByType")(function*(channelId: string) {
      const rows = yield* sql<{ key_type: string; n: string | number }>`
        SELECT key_type, count(*) AS n FROM qr_auth_state WHERE channel_id = ${channelId} GROUP BY key_type`
      return Object.fromEntries(rows.map((r) => [r.key_type, Number(r.n)])) as Record<string, number>
    }, Effect.orDie)

    return { readCreds, writeCreds, readKeys, writeKeys, wipe, countByType } as const
  })
}) {}
