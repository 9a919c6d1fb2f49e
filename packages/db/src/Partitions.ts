/**
 * The history tables partitioned by month (docs/OPERATING.md "Partitions and retention"):
 * `webhook_deliveries` with its `webhook_attempts`, and `events`, each in native Postgres range
 * partitions on its id. An id's first characters after the prefix are its ULID time
 * (`Ids.idFloor`), so a month is the range of ids `[idFloor(month), idFloor(next month))`:
 * - a statement naming an id (`WHERE id = $1`, `id IN (...)`) is pruned to one partition without
 *   naming a time;
 * - the primary key stays the id (a partitioned table's unique keys must include its partition
 *   key), so foreign keys, `ON CONFLICT (id)` and every lookup by id keep their meaning;
 * - a time window is a range of ids (`idWindow`), which a statement adds to be pruned to it.
 *
 * `partitionExisting` (a migration) turns a table with its rows into the first partition of a new
 * partitioned table; `ensure` makes the months ahead; `dropBefore` applies retention by dropping
 * whole partitions. The runner's `PartitionKeeper` calls the last two through `PartitionsRepo`.
 * Over 350 lines on purpose: the id windows the statements carry and the partitions they prune
 * follow one rule (an id's first characters are its time), kept in one place.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Ids, MessageStateMachine } from "@switchboard/domain"
import { Effect } from "effect"

/** A table partitioned on an id column, with the tables partitioned on a column holding its ids. */
export interface Layout {
  readonly table: string
  readonly prefix: Ids.IdPrefix
  readonly key: string
  /** partitioned with the same bounds on a column holding this table's ids; dropped with it */
  readonly aligned: ReadonlyArray<{ readonly table: string; readonly key: string }>
}

export const DELIVERIES: Layout = {
  table: "webhook_deliveries",
  prefix: "whd",
  key: "id",
  aligned: [{ table: "webhook_attempts", key: "delivery_id" }]
}

export const EVENTS: Layout = { table: "events", prefix: "evt", key: "id", aligned: [] }

/** Messages with their timeline (`message_transitions`, partitioned on `message_id`). */
export const MESSAGES: Layout = {
  table: "messages",
  prefix: "msg",
  key: "id",
  aligned: [{ table: "message_transitions", key: "message_id" }]
}

/** Every partitioned table. */
export const LAYOUTS: ReadonlyArray<Layout> = [DELIVERIES, EVENTS, MESSAGES]

/** Months made ahead of the current one. */
export const AHEAD_MONTHS = 3

/**
 * How far ahead of a reader's clock an id may have been made (the clocks of other nodes): a window
 * read up to "now" reads ids up to this much later, so pruning leaves out only the months ahead.
 */
export const CLOCK_SLACK_MS = 24 * 3600 * 1000

/** The first instant (epoch ms, UTC) of the month holding `ms`. */
export const monthStart = (ms: number): number => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}

/** The first instant of the month `n` months after the month holding `month` (epoch ms). */
export const addMonths = (month: number, n: number): number => {
  const d = new Date(month)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1)
}

/** `<table>_pYYYYMM`: the partition of the month starting at `month`. */
export const partitionName = (table: string, month: number): string => {
  const d = new Date(month)
  return `${table}_p${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, "0")}`
}

/**
 * The ids of `prefix` made at `from` (epoch ms) or later, up to `to` plus `CLOCK_SLACK_MS`, as
 * bounds: `key >= lower AND key < upper` prunes a statement to the partitions of that window.
 */
export const idWindow = (prefix: Ids.IdPrefix, from: number, to: number) => ({
  lower: Ids.idFloor(prefix, from),
  upper: Ids.idFloor(prefix, to + CLOCK_SLACK_MS)
})

/**
 * The ids of the messages that may still be queued at `now` (epoch ms): a queued message expires
 * `QUEUED_EXPIRY_MS` after it was made (`MessageSweeper`), so the queue's statements (the dispatch
 * take, its guard, the sweeper's probe) read the partitions of the last day, a day of clock slack
 * on each side, to the day (`idBound`): one partition, two in a month's first days.
 */
export const queuedWindow = (now: number) =>
  idWindow("msg", dayFloor(now - MessageStateMachine.QUEUED_EXPIRY_MS - CLOCK_SLACK_MS), dayCeil(now))

/**
 * `window` (ids of `prefix`, as `idWindow` makes them) cut at each month's first id inside it:
 * one slice a partition, in id order; the window itself when it lies in one month (most days).
 * For a "first row by some order" probe over a window that crosses a month (a month's last day
 * and first days, for `queuedWindow`): one `ORDER BY ... LIMIT 1` a slice, each an ordered walk
 * of one partition's index, and the first of those. Over both partitions at once, with statistics
 * that last saw the queue empty, the planner appended them and sorted the channel's whole queue
 * (1,505 rows read for 2 on 2026-11-30: packages/db/test/DispatchQueueRepo.test.ts).
 */
export const monthSlices = (
  prefix: Ids.IdPrefix,
  window: { readonly lower: string; readonly upper: string }
): ReadonlyArray<{ readonly lower: string; readonly upper: string }> => {
  const from = Ids.idTime(window.lower)
  const to = Ids.idTime(window.upper)
  if (from === undefined || to === undefined) return [window]
  const slices: Array<{ readonly lower: string; readonly upper: string }> = []
  let lower = window.lower
  for (let month = addMonths(monthStart(from), 1); month < to; month = addMonths(month, 1)) {
    const bound = Ids.idFloor(prefix, month)
    if (bound > lower) slices.push({ lower, upper: bound })
    lower = bound
  }
  slices.push({ lower, upper: window.upper })
  return slices
}

const DAY_MS = 24 * 3600 * 1000
/** The start of the (UTC) day holding `ms`, and the start of the next day (epoch ms). */
export const dayFloor = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS
export const dayCeil = (ms: number) => dayFloor(ms) + DAY_MS

/**
 * An id bound (`idWindow`'s) written into a statement as a constant, not a parameter: on a
 * prepared statement's generic plan the planner takes `id >= $1 AND id < $2` for a few rows
 * (its default for a range of unknown bounds) and walked the primary key over every message of
 * the window instead of the channel's queue index; with the bound in the text it prunes the
 * partitions when planning and estimates the range from the statistics. Bounds rounded to the
 * day (`queuedWindow`, `dayFloor`) keep the text, and so the prepared statement, the same for a day
 * (the pool prepares at most `PreparedStatements.MAX_NAMED` texts per connection).
 */
export const idBound = (sql: SqlClient.SqlClient, bound: string) => sql.literal(literal(bound))

/**
 * `column` (an id column of `prefix`, `alias.column` allowed) of a row made at `from` (epoch ms) or
 * later, a day of clock slack before it, to the day, as a constant (`idBound`): for a statement
 * whose rows cannot be older than `from` (a message is never older than the contact it names),
 * which then reads only the partitions since. No upper bound: the months ahead are empty (one
 * step down each one's index), and a bound from the reader's clock would hide rows from a test's
 * clock set back.
 */
export const idsFrom = (sql: SqlClient.SqlClient, prefix: Ids.IdPrefix, column: string, from: number) =>
  sql`${sql.literal(column.split(".").map(ident).join("."))} >= ${
    idBound(sql, Ids.idFloor(prefix, dayFloor(from - CLOCK_SLACK_MS)))
  }`

/**
 * An instant (epoch ms) as a `timestamptz` constant in a statement's text: a lower bound the
 * statistics estimate on a prepared statement's generic plan, where a parameter's is a guess
 * (rounded to the day, `dayFloor`, the text stays the same for a day: `idBound`).
 */
export const timeBound = (sql: SqlClient.SqlClient, ms: number) => {
  const iso = new Date(ms).toISOString()
  if (!/^[0-9T:.Z-]+$/.test(iso)) throw new Error(`not an instant: ${iso}`)
  return sql.literal(`'${iso}'::timestamptz`)
}

/**
 * Newest-first reads of messages (a list's page, the inbox's last message and unread count) look
 * first at the messages made in this long before their start (a month and a day: one or two
 * partitions). Their order is `created_at`, WhatsApp's time for an inbound message (earlier than
 * its id's, never more than `CLOCK_SLACK_MS` later: `MessagesRepo.insert` bounds it), so no message of an
 * older month has a `created_at` after `recentFrom(start) + CLOCK_SLACK_MS`: a read whose rows
 * are all after that is settled by the recent months alone, and reads every month otherwise.
 */
export const RECENT_MS = 31 * 24 * 3600 * 1000

/** The start of the recent months of a read starting at `start` (epoch ms): `RECENT_MS` before, to the day. */
export const recentFrom = (start: number) => dayFloor(start - RECENT_MS)

/**
 * `column` (an id column, `alias.column` allowed) within `window` (`idWindow`'s bounds), the
 * bounds written as constants (`idBound`): the statement reads only the partitions of the window,
 * on its generic plan too.
 */
export const inWindow = (
  sql: SqlClient.SqlClient,
  column: string,
  window: { readonly lower: string; readonly upper: string }
) => {
  const c = sql.literal(column.split(".").map(ident).join("."))
  return sql`${c} >= ${idBound(sql, window.lower)} AND ${c} < ${idBound(sql, window.upper)}`
}

/**
 * The least and greatest of `ids` (not empty): a batch's ids as a range, which a statement adds
 * to read only their partitions (`id = ANY($1)`, one array parameter, is not pruned).
 */
export const idRange = (ids: ReadonlyArray<string>): readonly [string, string] =>
  ids.reduce<readonly [string, string]>(
    ([low, high], id) => [id < low ? id : low, id > high ? id : high],
    [ids[0]!, ids[0]!]
  )

/** A partition as the catalogue describes it: its name and bounds (a `null` lower bound: MINVALUE). */
export interface Partition {
  readonly name: string
  readonly from: string | null
  readonly to: string
}

const BOUND = /^FOR VALUES FROM \((MINVALUE|'([^']*)')\) TO \('([^']*)'\)$/

const byUpperBound = (a: Partition, b: Partition) => (a.to < b.to ? -1 : a.to > b.to ? 1 : 0)

/** The partitions of `table`, lowest first (none if it is not partitioned). */
export const partitions = (table: string): Effect.Effect<Array<Partition>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ name: string; bound: string }>`
      SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass(${table})`
    return rows.flatMap((row) => {
      const match = BOUND.exec(row.bound)
      return match === null ? [] : [{ name: row.name, from: match[2] ?? null, to: match[3]! }]
    }).sort(byUpperBound)
  })

/** An id bound as an SQL literal: only an id's characters, so it cannot end the quotes. */
const literal = (bound: string): string => {
  if (!/^[a-z]+_[0-9A-Z]*$/.test(bound)) throw new Error(`not an id bound: ${bound}`)
  return `'${bound}'`
}

/** One of our names as an SQL identifier (lower case letters, digits, `_`). */
const ident = (name: string): string => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain identifier: ${name}`)
  return name
}

/** Serialises the partition changes of every process (a start's `ensure`, the keeper's runs). */
const lockPartitions = (sql: SqlClient.SqlClient) => sql`SELECT pg_advisory_xact_lock(727275)`

/**
 * Makes the partitions of `layout` (and of its aligned tables) of every month from the end of the
 * last one through `AHEAD_MONTHS` after the month of `now`, one transaction per month. Each is
 * created as a table of its own (`LIKE` the parent: columns, defaults, checks) and then attached:
 * attaching takes a SHARE UPDATE EXCLUSIVE lock on the parent, which no read or write waits for,
 * and builds the parent's indexes on the empty table. Returns the names made (none for a table
 * that is not partitioned yet).
 */
export const ensure = (layout: Layout, now: number): Effect.Effect<Array<string>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const through = addMonths(monthStart(now), AHEAD_MONTHS)
    const made: Array<string> = []
    while (true) {
      const month = yield* sql.withTransaction(Effect.gen(function*() {
        yield* lockPartitions(sql)
        const last = (yield* partitions(layout.table)).at(-1)
        if (last === undefined) return undefined
        const month = monthStart(Ids.idTime(last.to) ?? now)
        if (month > through) return undefined
        const from = Ids.idFloor(layout.prefix, month)
        const to = Ids.idFloor(layout.prefix, addMonths(month, 1))
        for (const table of [layout.table, ...layout.aligned.map((a) => a.table)]) {
          const name = partitionName(table, month)
          yield* sql.unsafe(
            `CREATE TABLE ${ident(name)} (LIKE ${ident(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`
          )
          yield* sql.unsafe(
            `ALTER TABLE ${ident(table)} ATTACH PARTITION ${ident(name)} FOR VALUES FROM (${literal(from)}) TO (${
              literal(to)
            })`
          )
          made.push(name)
        }
        return month
      }))
      if (month === undefined) return made
    }
  })

/**
 * Drops the partitions of `layout` whose every id was made before `cutoff` (epoch ms), with the
 * partitions of its aligned tables of the same bounds, in one transaction each. Dropping a
 * partition takes an ACCESS EXCLUSIVE lock on the parent for the moment of a catalogue change: it
 * waits at most `lock_timeout` (2 s) for the statements running on the table (SQLSTATE 55P03 if
 * they outlast it: `DatabaseUnavailable`, the next run tries again). Returns the names dropped.
 */
export const dropBefore = (
  layout: Layout,
  cutoff: number
): Effect.Effect<Array<string>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const floor = Ids.idFloor(layout.prefix, cutoff)
    const dropped: Array<string> = []
    while (true) {
      const names = yield* sql.withTransaction(Effect.gen(function*() {
        yield* lockPartitions(sql)
        yield* sql`SET LOCAL lock_timeout = '2s'`
        const expired = (yield* partitions(layout.table)).find((p) => p.to <= floor)
        if (expired === undefined) return []
        const names: Array<string> = []
        for (const aligned of layout.aligned) {
          const match = (yield* partitions(aligned.table)).find((p) => p.to === expired.to)
          if (match !== undefined) names.push(match.name)
        }
        names.push(expired.name)
        for (const name of names) yield* sql.unsafe(`DROP TABLE ${ident(name)}`)
        return names
      }))
      if (names.length === 0) return dropped
      dropped.push(...names)
    }
  })

/**
 * The upper bound of the first partition of a table turned partitioned now (`partitionExisting`):
 * the start of the month after the later of `now` and the newest id already in `tables` (each
 * `[table, key]`), as an id bound of `prefix`.
 */
export const firstUpperBound = (
  prefix: Ids.IdPrefix,
  tables: ReadonlyArray<readonly [table: string, key: string]>,
  now: number
): Effect.Effect<string, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let newest = now
    for (const [table, key] of tables) {
      const [row] = yield* sql.unsafe<{ newest: string | null }>(
        `SELECT max(${ident(key)}) AS newest FROM ${ident(table)}`
      )
      const at = row?.newest ? Ids.idTime(row.newest) : undefined
      if (at !== undefined && at > newest) newest = at
    }
    return Ids.idFloor(prefix, addMonths(monthStart(newest), 1))
  })

/**
 * Turns `table` (with its rows) into a table partitioned by range on `key`, as a migration does
 * on an existing installation. The table is renamed `<table>_before` and becomes the partition of
 * every id below `upper` under a new partitioned `<table>`: same columns, defaults, checks,
 * indexes (a unique one that does not include `key` stays on the old partition only) and foreign
 * keys, and the sequences its columns own move to the new table. No row is copied: the old
 * table's indexes and foreign keys are taken over as they are; attaching it reads it once to check
 * that its ids lie below `upper`. Foreign keys that point AT `table` must be dropped before.
 */
export const partitionExisting = (
  table: string,
  key: string,
  upper: string
): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const before = `${table}_before`
    const indexes = yield* sql<
      { name: string; def: string; constraint_name: string | null; constraint_type: string | null; keys: Array<string> }
    >`SELECT ci.relname AS name, pg_get_indexdef(i.indexrelid) AS def, con.conname AS constraint_name,
        con.contype::text AS constraint_type,
        ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n) AS keys
      FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid
      LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
        AND con.contype IN ('p', 'u')
      WHERE i.indrelid = to_regclass(${table})`
    const foreignKeys = yield* sql<{ name: string; def: string }>`
      SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE conrelid = to_regclass(${table}) AND contype = 'f'`
    const sequences = yield* sql<{ sequence: string; column_name: string }>`
      SELECT s.relname AS sequence, a.attname AS column_name FROM pg_depend d
      JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
      JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
      WHERE d.refobjid = to_regclass(${table}) AND d.classid = 'pg_class'::regclass AND d.deptype = 'a'`
    yield* sql.unsafe(`ALTER TABLE ${ident(table)} RENAME TO ${ident(before)}`)
    for (const index of indexes) {
      yield* sql.unsafe(`ALTER INDEX ${ident(index.name)} RENAME TO ${ident(`${index.name}_before`)}`)
    }
    yield* sql.unsafe(
      `CREATE TABLE ${ident(table)} (LIKE ${ident(before)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
       PARTITION BY RANGE (${ident(key)})`
    )
    for (const index of indexes) {
      const unique = index.constraint_type !== null || /^CREATE UNIQUE /.test(index.def)
      if (unique && !index.keys.includes(key)) continue
      if (index.constraint_type !== null) {
        yield* sql.unsafe(
          `ALTER TABLE ${ident(table)} ADD CONSTRAINT ${ident(index.constraint_name!)} ${
            index.constraint_type === "p" ? "PRIMARY KEY" : "UNIQUE"
          } (${index.keys.map(ident).join(", ")})`
        )
      } else yield* sql.unsafe(index.def)
    }
    for (const fk of foreignKeys) {
      yield* sql.unsafe(`ALTER TABLE ${ident(table)} ADD CONSTRAINT ${ident(fk.name)} ${fk.def}`)
    }
    yield* sql.unsafe(
      `ALTER TABLE ${ident(table)} ATTACH PARTITION ${ident(before)} FOR VALUES FROM (MINVALUE) TO (${literal(upper)})`
    )
    for (const s of sequences) {
      yield* sql.unsafe(`ALTER SEQUENCE ${ident(s.sequence)} OWNED BY ${ident(table)}.${ident(s.column_name)}`)
    }
  })
