/**
 * Rows a benchmark needs in bulk, written with plain SQL that mirrors what the API writes (the
 * columns `Sandbox.create`, `Sandbox.verify` and `Messages.send` fill), because going through
 * the API for 1,000 channels and 150,000 messages would take longer than the benchmark.
 * Left out on purpose: the `channel.created` / `message.queued` events and their outbox rows
 * (nothing in dispatch reads them).
 */
import type pg from "pg"
import { ulid } from "ulid"

const id = (prefix: string) => `${prefix}_${ulid()}`

export interface SeededChannel {
  readonly id: string
  readonly sessionId: string
}

/**
 * `count` connected sandbox channels (2 msg/s, like `Sandbox.create`), each with an active
 * sandbox session on its own number and `recipient` verified (so API sends to them are accepted).
 */
export const sandboxChannels = async (
  db: pg.Client,
  workspaceId: string,
  count: number,
  recipient: string
): Promise<Array<SeededChannel>> => {
  const now = new Date().toISOString()
  const expires = new Date(Date.now() + 72 * 3600 * 1000).toISOString()
  const channels = Array.from({ length: count }, (_, i) => ({
    id: id("ch"),
    sessionId: id("sbx"),
    phone: `+1666${String(i).padStart(7, "0")}`
  }))
  const capabilities = JSON.stringify({ max_throughput_mps: 2, message_types: ["text"] })
  for (let i = 0; i < channels.length; i += 500) {
    const slice = channels.slice(i, i + 500)
    await db.query(
      `INSERT INTO channels (id, workspace_id, name, provider, status, is_default, phone_number, capabilities,
         capabilities_refreshed_at, created_at, updated_at)
       SELECT c.id, $1, 'Sandbox ' || c.phone || ' (' || right(c.sid, 6) || ')', 'sandbox', 'connected', false, c.phone,
         $2::jsonb, $3, $3, $3
       FROM unnest($4::text[], $5::text[], $6::text[]) AS c(id, sid, phone)`,
      [workspaceId, capabilities, now, slice.map((c) => c.id), slice.map((c) => c.sessionId), slice.map((c) => c.phone)]
    )
    await db.query(
      `INSERT INTO sandbox_sessions (id, workspace_id, channel_id, phone_number, status, code_hash, expires_at,
         created_at, updated_at)
       SELECT c.sid, $1, c.id, c.phone, 'active', 'seeded', $2, $3, $3
       FROM unnest($4::text[], $5::text[], $6::text[]) AS c(id, sid, phone)`,
      [workspaceId, expires, now, slice.map((c) => c.id), slice.map((c) => c.sessionId), slice.map((c) => c.phone)]
    )
    await db.query(
      `INSERT INTO sandbox_recipients (session_id, phone_number, verified_at) SELECT sid, $1, $2 FROM unnest($3::text[]) AS sid`,
      [recipient, now, slice.map((c) => c.sessionId)]
    )
  }
  return channels.map(({ id, sessionId }) => ({ id, sessionId }))
}

export type Category = "authentication" | "utility" | "marketing"
export const PRIORITY: Record<Category, number> = { authentication: 0, utility: 1, marketing: 2 }

/**
 * A backlog of `perChannel` queued outbound messages on every channel (contact, open
 * conversation, message row, its `NULL -> queued` timeline row), categories drawn by `pick`,
 * created 1 ms apart in the order drawn (so creation order and priority order differ).
 */
export const backlog = async (
  db: pg.Client,
  workspaceId: string,
  channels: ReadonlyArray<SeededChannel>,
  recipient: string,
  perChannel: number,
  pick: () => Category
) => {
  const base = Date.now() - perChannel - 1000
  const now = new Date().toISOString()
  const contact = await db.query(
    `INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT (workspace_id, phone_number) DO UPDATE SET updated_at = EXCLUDED.updated_at RETURNING id`,
    [id("cnt"), workspaceId, recipient, now]
  )
  const contactId = contact.rows[0].id as string
  let total = 0
  for (let i = 0; i < channels.length; i += 50) {
    const slice = channels.slice(i, i + 50)
    const conversations = slice.map(() => id("cnv"))
    await db.query(
      `INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, last_message_at, created_at, updated_at)
       SELECT c.id, $1, c.channel_id, $2, 'open', $3, $3, $3 FROM unnest($4::text[], $5::text[]) AS c(id, channel_id)`,
      [workspaceId, contactId, now, conversations, slice.map((c) => c.id)]
    )
    const rows: { ids: Array<string>; ch: Array<string>; cnv: Array<string>; cat: Array<string>; at: Array<string> } = {
      ids: [],
      ch: [],
      cnv: [],
      cat: [],
      at: []
    }
    slice.forEach((channel, j) => {
      for (let k = 0; k < perChannel; k++) {
        rows.ids.push(id("msg"))
        rows.ch.push(channel.id)
        rows.cnv.push(conversations[j]!)
        rows.cat.push(pick())
        rows.at.push(new Date(base + k).toISOString())
      }
    })
    await db.query(
      `INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction, from_number, to_number,
         type, body, category, priority, status, metadata, created_at, updated_at)
       SELECT m.id, $1, m.channel_id, m.cnv, $2, 'outbound', ch.phone_number, $3, 'text', 'bench ' || m.id, m.category,
         CASE m.category WHEN 'authentication' THEN 0 WHEN 'utility' THEN 1 ELSE 2 END, 'queued', '{}'::jsonb, m.at, m.at
       FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[]) AS m(id, channel_id, cnv, category, at)
       JOIN channels ch ON ch.id = m.channel_id`,
      [workspaceId, contactId, recipient, rows.ids, rows.ch, rows.cnv, rows.cat, rows.at]
    )
    await db.query(
      `INSERT INTO message_transitions (message_id, from_state, to_state, at)
       SELECT m.id, NULL, 'queued', m.at FROM unnest($1::text[], $2::timestamptz[]) AS m(id, at)`,
      [rows.ids, rows.at]
    )
    total += rows.ids.length
  }
  return total
}
