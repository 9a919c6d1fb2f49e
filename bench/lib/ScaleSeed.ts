/**
 * History in bulk for bench/scale.ts: rows cloned IN SQL (`generate_series`, one statement per
 * 100,000 rows) from real rows the API wrote a moment before (the templates), so every column a
 * migration added is filled as the service fills it without this file naming it. Each clone `g`
 * gets its own deterministic id (`<prefix>_00SEED<g, 20 digits>`: 26 characters like a ULID, and
 * sorting before every real id), its own contact, conversation, message, event and delivery, and
 * times `g` seconds before its template's (1,000,000 rows span 11.6 days).
 *
 * - contacts: `+1999<g>` numbers, named `Seeded g`, no WhatsApp LID;
 * - conversations: contact `g` on channel `g mod channels` (one in ten open, the rest closed);
 * - messages: one per conversation, every other one a clone of an outbound message that was
 *   dispatched (its status as the sandbox left it) or of an inbound one, `provider_message_id`
 *   `seed-g`;
 * - events: a clone of a `message.queued` event about message `g`;
 * - webhook_deliveries: a clone of a delivery that succeeded, of event `g`, to the same endpoint.
 *
 * Left out: message timeline rows (`message_transitions`) and webhook attempts.
 */
import type pg from "pg"

export interface Templates {
  readonly contactId: string
  readonly outboundMessageId: string
  readonly inboundMessageId: string
  readonly eventId: string
  readonly deliveryId: string
  readonly channelIds: ReadonlyArray<string>
}

const CHUNK = 100_000

export const seedId = (prefix: string) => `'${prefix}_00SEED' || lpad(g::text, 20, '0')`

const shifted = (column: string) => `'${column}', t.${column} - g * interval '1 second'`

/** One INSERT of the clones `from..to` of the row `templateId` of `table`, with `overrides` (jsonb pairs). */
const clone = (table: string, overrides: string, templates = "id = $1", pick = "true") =>
  `INSERT INTO ${table}
   SELECT (jsonb_populate_record(NULL::${table}, to_jsonb(t) || jsonb_build_object(${overrides}))).*
   FROM (SELECT * FROM ${table} WHERE ${templates}) t, generate_series($2::int, $3::int) AS g
   WHERE ${pick}`

const statements = (
  channels: number
): Array<{ table: string; sql: string; params: (t: Templates) => Array<unknown> }> => [
  {
    table: "contacts",
    sql: clone(
      "contacts",
      `'id', ${seedId("cnt")}, 'phone_number', '+1999' || lpad(g::text, 8, '0'), 'name', 'Seeded ' || g,
       'whatsapp_lid', NULL, ${shifted("created_at")}, ${shifted("updated_at")}`
    ),
    params: (t) => [t.contactId]
  },
  {
    table: "conversations",
    // the template: the conversation of the outbound message; its channel replaced by channel g mod n
    sql: clone(
      "conversations",
      `'id', ${seedId("cnv")}, 'contact_id', ${seedId("cnt")}, 'channel_id', ($4::text[])[g % ${channels} + 1],
       'status', CASE WHEN g % 10 = 0 THEN 'open' ELSE 'closed' END,
       ${shifted("created_at")}, ${shifted("updated_at")}, ${shifted("last_message_at")}`,
      "id = (SELECT conversation_id FROM messages WHERE id = $1)"
    ),
    params: (t) => [t.outboundMessageId, t.channelIds]
  },
  {
    table: "messages",
    sql: clone(
      "messages",
      `'id', ${seedId("msg")}, 'conversation_id', ${seedId("cnv")}, 'contact_id', ${seedId("cnt")},
       'channel_id', ($5::text[])[g % ${channels} + 1], 'provider_message_id', 'seed-' || g,
       ${shifted("created_at")}, ${shifted("updated_at")}, ${shifted("sent_at")}, ${shifted("delivered_at")},
       ${shifted("read_at")}`,
      "id IN ($1, $4)",
      "(t.id = $1) = (g % 2 = 0)"
    ),
    params: (t) => [t.outboundMessageId, t.inboundMessageId, t.channelIds]
  },
  {
    table: "events",
    sql: clone("events", `'id', ${seedId("evt")}, 'object_id', ${seedId("msg")}, ${shifted("created_at")}`),
    params: (t) => [t.eventId]
  },
  {
    table: "webhook_deliveries",
    sql: clone(
      "webhook_deliveries",
      `'id', ${seedId("whd")}, 'event_id', ${seedId("evt")}, ${shifted("created_at")}, ${shifted("updated_at")}`
    ),
    params: (t) => [t.deliveryId]
  }
]

/**
 * Grows each of the five tables from `from` to `to` seeded rows (clones `from + 1 .. to`), then
 * `VACUUM ANALYZE`s them (what autovacuum would do after a bulk load: fresh statistics and a
 * visibility map). Returns the seconds it took per table.
 */
export const grow = async (db: pg.Client, templates: Templates, from: number, to: number) => {
  const seconds: Record<string, number> = {}
  await db.query("SET maintenance_work_mem = '256MB'")
  for (const statement of statements(templates.channelIds.length)) {
    const started = Date.now()
    // the indexes no constraint stands on are dropped during the load and built again after it
    // (one sorted build instead of a million insertions each); the same definitions, read from
    // the catalogue. Partial indexes stay: the clones are settled history, so they hold few of
    // them, and the service's sweeps (the sandbox's receipt repair, every second) find their
    // rows through them; without them each sweep was a sequential scan of the growing table and
    // 1M rows took 28 minutes to seed
    const indexes = await db.query<{ name: string; def: string }>(
      `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
       WHERE i.indrelid = $1::regclass AND i.indpred IS NULL
         AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`,
      [statement.table]
    )
    for (const index of indexes.rows) await db.query(`DROP INDEX ${index.name}`)
    for (let low = from + 1; low <= to; low += CHUNK) {
      const high = Math.min(to, low + CHUNK - 1)
      const [first, ...rest] = statement.params(templates)
      // $1 is the template, $2/$3 the range, the rest follow
      await db.query(statement.sql, [first, low, high, ...rest])
    }
    // a partitioned table's index reads `ON ONLY` (the parent alone): made again on every partition
    for (const index of indexes.rows) await db.query(index.def.replace(" ON ONLY ", " ON "))
    await db.query(`VACUUM ANALYZE ${statement.table}`)
    seconds[statement.table] = (Date.now() - started) / 1000
  }
  return seconds
}
