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
 *
 * How fast: one statement per 100,000 rows of a table, a plain select list (`cloneSql`), no
 * foreign-key checks or triggers during the load (`grow`), the non-partial indexes built after
 * it. 100,000 rows of each of the five tables took 12 s on a loaded machine (load 14 on its 2
 * cores) against 223 s before (the jsonb row rebuilt once per column, then the checks);
 * bench/RESULTS.md 16 has the rates and the projection for 10M rows. `bench:scale --seed-only`
 * seeds the sizes without measuring anything (each table's rate: bench/results/scale-seed.jsonl).
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

const shifted = (column: string) => ({ [column]: `t.${column} - g * interval '1 second'` })

/** How the clone `g` of a row `t` of one table differs from `t`: an SQL expression per column. */
export interface Clone {
  readonly table: string
  /** the ids' prefix (`seedId`) */
  readonly prefix: string
  readonly overrides: Record<string, string>
  /** the template rows: `WHERE` of `SELECT * FROM table` (`$1`, `$4`... are the params) */
  readonly templates: string
  /** which template clone `g` copies, when there are several */
  readonly pick: string
  readonly params: (t: Templates) => Array<unknown>
}

/**
 * One INSERT of the clones `$2..$3` of a table's template rows: every column the table has now,
 * from the catalogue (`columns`, in order), copied from the template but for `overrides`. A plain
 * select list: an earlier form, `SELECT (jsonb_populate_record(...)).*`, evaluated the function
 * (and the row's jsonb) once per COLUMN of every row, 1.4 ms a message row (bench/RESULTS.md 16).
 */
export const cloneSql = (clone: Clone, columns: ReadonlyArray<string>) => {
  for (const column of Object.keys(clone.overrides)) {
    if (!columns.includes(column)) throw new Error(`ScaleSeed: ${clone.table} has no column ${column}`)
  }
  const list = columns.map((c) => `"${c}"`).join(", ")
  const values = columns.map((c) => clone.overrides[c] ?? `t."${c}"`).join(",\n     ")
  return `INSERT INTO ${clone.table} (${list})
   SELECT ${values}
   FROM (SELECT * FROM ${clone.table} WHERE ${clone.templates}) t, generate_series($2::int, $3::int) AS g
   WHERE ${clone.pick}`
}

export const clones = (channels: number): Array<Clone> => [
  {
    table: "contacts",
    prefix: "cnt",
    overrides: {
      id: seedId("cnt"),
      phone_number: `'+1999' || lpad(g::text, 8, '0')`,
      name: `'Seeded ' || g`,
      whatsapp_lid: "NULL",
      ...shifted("created_at"),
      ...shifted("updated_at")
    },
    templates: "id = $1",
    pick: "true",
    params: (t) => [t.contactId]
  },
  {
    table: "conversations",
    prefix: "cnv",
    // the template: the conversation of the outbound message; its channel replaced by channel g mod n
    overrides: {
      id: seedId("cnv"),
      contact_id: seedId("cnt"),
      channel_id: `($4::text[])[g % ${channels} + 1]`,
      status: `CASE WHEN g % 10 = 0 THEN 'open' ELSE 'closed' END`,
      ...shifted("created_at"),
      ...shifted("updated_at"),
      ...shifted("last_message_at")
    },
    templates: "id = (SELECT conversation_id FROM messages WHERE id = $1)",
    pick: "true",
    params: (t) => [t.outboundMessageId, t.channelIds]
  },
  {
    table: "messages",
    prefix: "msg",
    overrides: {
      id: seedId("msg"),
      conversation_id: seedId("cnv"),
      contact_id: seedId("cnt"),
      channel_id: `($5::text[])[g % ${channels} + 1]`,
      provider_message_id: `'seed-' || g`,
      ...shifted("created_at"),
      ...shifted("updated_at"),
      ...shifted("sent_at"),
      ...shifted("delivered_at"),
      ...shifted("read_at")
    },
    templates: "id IN ($1, $4)",
    pick: "(t.id = $1) = (g % 2 = 0)",
    params: (t) => [t.outboundMessageId, t.inboundMessageId, t.channelIds]
  },
  {
    table: "events",
    prefix: "evt",
    overrides: { id: seedId("evt"), object_id: seedId("msg"), ...shifted("created_at") },
    templates: "id = $1",
    pick: "true",
    params: (t) => [t.eventId]
  },
  {
    table: "webhook_deliveries",
    prefix: "whd",
    overrides: {
      id: seedId("whd"),
      event_id: seedId("evt"),
      ...shifted("created_at"),
      ...shifted("updated_at")
    },
    templates: "id = $1",
    pick: "true",
    params: (t) => [t.deliveryId]
  }
]

/** The columns `table` has now, in order (generated ones left out: they cannot be written). */
export const columnsOf = async (db: pg.Client, table: string) =>
  (await db.query<{ name: string }>(
    `SELECT attname AS name FROM pg_attribute
     WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
     ORDER BY attnum`,
    [table]
  )).rows.map((r) => r.name)

/**
 * The foreign keys of `table` the load skipped, checked once for the clones `from + 1 .. to`: one
 * anti-join per key (what the checks row by row would have refused). Returns the seconds it took.
 */
const checkReferences = async (db: pg.Client, table: string, prefix: string, from: number, to: number) => {
  const started = performance.now()
  const keys = await db.query<{ name: string; ref: string; cols: Array<string>; refcols: Array<string> }>(
    `SELECT c.conname AS name, c.confrelid::regclass::text AS ref,
       array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i) AS cols,
       array(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i) AS refcols
     FROM pg_constraint c WHERE c.contype = 'f' AND c.conrelid = $1::regclass`,
    [table]
  )
  const id = (g: number) => `${prefix}_00SEED${String(g).padStart(20, "0")}`
  for (const key of keys.rows) {
    const present = key.cols.map((c) => `t."${c}" IS NOT NULL`).join(" AND ")
    const match = key.cols.map((c, i) => `r."${key.refcols[i]}" = t."${c}"`).join(" AND ")
    const missing = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} t WHERE t.id BETWEEN $1 AND $2 AND ${present}
         AND NOT EXISTS (SELECT 1 FROM ${key.ref} r WHERE ${match})`,
      [id(from + 1), id(to)]
    )
    if (missing.rows[0]!.n !== 0) {
      throw new Error(`ScaleSeed: ${missing.rows[0]!.n} clones of ${table} break its foreign key ${key.name}`)
    }
  }
  return since(started)
}

/** What one table's growth took: the inserts, the index builds and `VACUUM ANALYZE`, in seconds. */
export interface Growth {
  readonly table: string
  readonly rows: number
  readonly insert_s: number
  readonly indexes_s: number
  readonly vacuum_s: number
  /** the foreign keys checked after the load (0 when they were checked row by row during it) */
  readonly references_s: number
  readonly rows_per_s: number
}

const since = (started: number) => Math.round((performance.now() - started) / 10) / 100

/**
 * Grows each of the five tables from `from` to `to` seeded rows (clones `from + 1 .. to`), then
 * `VACUUM ANALYZE`s them (what autovacuum would do after a bulk load: fresh statistics and a
 * visibility map). Returns the seconds it took per table; `log` hears each table's figures
 * (`Growth`: insert rows per second and the rest).
 *
 * Foreign keys and triggers are not run during the load (`session_replication_role = replica`,
 * for this connection only, when it may: a superuser's): every clone refers to rows made by the
 * clones before it or by the API (its channel, workspace, endpoint), and the one trigger on these
 * tables, the queue counters' (migration 0044), counts `queued` messages, which no clone is (the
 * templates are checked). Their checks cost a third of the insert time (bench/RESULTS.md 16); the
 * foreign keys are checked once after the load instead, one anti-join each (`checkReferences`).
 */
export const grow = async (
  db: pg.Client,
  templates: Templates,
  from: number,
  to: number,
  log: (growth: Growth) => void = () => {}
) => {
  const queued = await db.query(
    "SELECT id FROM messages WHERE id IN ($1, $2) AND status = 'queued'",
    [templates.outboundMessageId, templates.inboundMessageId]
  )
  if (queued.rowCount !== 0) {
    throw new Error("ScaleSeed: a template message is queued; the queue counters would miss its clones")
  }
  const seconds: Record<string, number> = {}
  await db.query("SET maintenance_work_mem = '256MB'")
  const replica = await db.query("SET session_replication_role = replica").then(() => true, () => false)
  try {
    for (const clone of clones(templates.channelIds.length)) {
      const sql = cloneSql(clone, await columnsOf(db, clone.table))
      const started = performance.now()
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
        [clone.table]
      )
      for (const index of indexes.rows) await db.query(`DROP INDEX ${index.name}`)
      for (let low = from + 1; low <= to; low += CHUNK) {
        const high = Math.min(to, low + CHUNK - 1)
        const [first, ...rest] = clone.params(templates)
        // $1 is the template, $2/$3 the range, the rest follow
        await db.query(sql, [first, low, high, ...rest])
      }
      const inserted = performance.now()
      // a partitioned table's index reads `ON ONLY` (the parent alone): made again on every partition
      for (const index of indexes.rows) await db.query(index.def.replace(" ON ONLY ", " ON "))
      const indexed = performance.now()
      await db.query(`VACUUM ANALYZE ${clone.table}`)
      const vacuum_s = since(indexed)
      const references_s = replica ? await checkReferences(db, clone.table, clone.prefix, from, to) : 0
      const insert_s = Math.round((inserted - started) / 10) / 100
      log({
        table: clone.table,
        rows: to - from,
        insert_s,
        indexes_s: Math.round((indexed - inserted) / 10) / 100,
        vacuum_s,
        references_s,
        rows_per_s: Math.round((to - from) / Math.max(insert_s, 0.01))
      })
      seconds[clone.table] = since(started)
    }
  } finally {
    if (replica) await db.query("RESET session_replication_role")
  }
  return seconds
}
