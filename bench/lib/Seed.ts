/**
 * Sandbox channels written straight into a stack's database, for benchmarks that need thousands
 * of them (10,000 sessions through the API take many minutes and say nothing about what is
 * measured). Each channel gets the rows `POST /v1/sandbox/sessions` + `/verify` write: a
 * `connected` sandbox channel with the sandbox capability snapshot, an active session holding its
 * own pool number (the partial unique index allows one active session per number) and one
 * verified recipient. Not written: the API's `channel.created` event (nothing here reads it).
 */
import { createHash } from "node:crypto"
import type pg from "pg"
import { monotonicFactory } from "ulid"
import { RECIPIENT } from "./Stack.js"

const ulid = monotonicFactory()
const SESSION_TTL_MS = 72 * 3600 * 1000
const CAPABILITIES = JSON.stringify({ max_throughput_mps: 2, message_types: ["text"] })

/** Writes `count` verified sandbox channels into `workspaceId`, in batches; their ids. */
export const seedSandboxChannels = async (
  db: pg.Client,
  workspaceId: string,
  count: number,
  batch = 1000
): Promise<Array<string>> => {
  const ids: Array<string> = []
  const now = Date.now()
  const at = new Date(now).toISOString()
  const expires = new Date(now + SESSION_TTL_MS).toISOString()
  const codeHash = createHash("sha256").update("000000").digest("hex")
  for (let start = 0; start < count; start += batch) {
    const n = Math.min(batch, count - start)
    const channels: Array<string> = []
    const sessions: Array<string> = []
    const numbers: Array<string> = []
    for (let i = 0; i < n; i++) {
      const seq = start + i
      channels.push(`ch_${ulid(now)}`)
      sessions.push(`sbx_${ulid(now)}`)
      // outside the pool the api node hands out (+1555...), so a session the bench creates never collides
      numbers.push(`+1666${String(seq).padStart(7, "0")}`)
    }
    await db.query("BEGIN")
    await db.query(
      `INSERT INTO channels (id, workspace_id, name, provider, status, is_default, phone_number, capabilities,
         capabilities_refreshed_at, created_at, updated_at)
       SELECT c, $1, 'Sandbox ' || p || ' (' || right(s, 6) || ')', 'sandbox', 'connected', false, p, $2::jsonb, $3, $3, $3
       FROM unnest($4::text[], $5::text[], $6::text[]) AS t(c, s, p)`,
      [workspaceId, CAPABILITIES, at, channels, sessions, numbers]
    )
    await db.query(
      `INSERT INTO sandbox_sessions (id, workspace_id, channel_id, phone_number, status, code_hash, expires_at,
         created_at, updated_at)
       SELECT s, $1, c, p, 'active', $2, $3, $4, $4 FROM unnest($5::text[], $6::text[], $7::text[]) AS t(c, s, p)`,
      [workspaceId, codeHash, expires, at, channels, sessions, numbers]
    )
    await db.query(
      `INSERT INTO sandbox_recipients (session_id, phone_number, verified_at) SELECT s, $1, $2 FROM unnest($3::text[]) AS s`,
      [RECIPIENT, at, sessions]
    )
    await db.query("COMMIT")
    ids.push(...channels)
  }
  return ids
}
