/**
 * The operators' faults (docs/OPERATING.md "Scaling runners up and down", "A paused runner"),
 * shared by the real-mode tests (test/scaleRunners.e2e.test.ts, test/pausedApi.e2e.test.ts) and
 * bench/chaos.ts: runners scaled out and in under traffic, a paused runner, a paused api node, and
 * a CPU hog beside the stack. Each scenario returns what it measured; the caller asserts or records.
 */
import { spawn } from "node:child_process"
import { availableParallelism } from "node:os"
import pg from "pg"
import { settle, startLoad, tally } from "./Chaos.js"
import type { ChaosStack, Sent } from "./Chaos.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const SHARDS = 300
/** the cluster's `shardLockExpiration` (packages/entities/src/ClusterSettings.ts), in seconds */
const EXPIRY_S = 8

const accepted = (results: ReadonlyArray<Sent>) => [...new Set(results.flatMap((r) => (r.id ? [r.id] : [])))]
const seconds = (ms: number) => Math.round(ms / 10) / 100
const live = (stack: ChaosStack) =>
  stack.runners.filter((r) => r.child.exitCode === null && r.child.signalCode === null)

const withDb = async <A>(url: string, body: (db: pg.Client) => Promise<A>) => {
  const db = new pg.Client({ connectionString: url })
  await db.connect()
  try {
    return await body(db)
  } finally {
    await db.end()
  }
}

/** `effect_cluster_shards` of each running runner's `/metrics`, in start order (NaN: no answer). */
export const shardGauges = async (stack: ChaosStack) =>
  Promise.all(
    live(stack).map(async (runner) => {
      try {
        const text = await (await fetch(stack.runnerInfo.get(runner)!.metricsUrl, {
          signal: AbortSignal.timeout(10_000)
        })).text()
        const line = /^effect_cluster_shards(?:\{[^}]*\})? (\S+)$/m.exec(text)
        return line ? Number(line[1]) : Number.NaN
      } catch {
        return Number.NaN
      }
    })
  )

/** Lock rows refreshed within the expiry, by runner address (`cluster_locks`). */
export const lockRows = async (db: pg.Client) =>
  new Map(
    (await db.query<{ address: string; n: number }>(
      `SELECT address, count(*)::int AS n FROM cluster_locks
       WHERE acquired_at >= NOW() - make_interval(secs => $1) GROUP BY address`,
      [EXPIRY_S]
    )).rows.map((r) => [r.address, r.n])
  )

/** Runners registered with the cluster (`cluster_runners`): those shards are assigned to. */
export const registeredRunners = async (db: pg.Client) =>
  (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM cluster_runners")).rows[0]!.n

/**
 * Polls the age of each listed runner's oldest lock row every 250 ms: how late its lock refresh
 * (every `shardLockRefreshInterval`) ran. A row older than the expiry may be taken by another runner.
 */
export const watchLockAges = (url: string, addresses: () => ReadonlyArray<string>) => {
  let running = true
  let maxAgeS = 0
  const done = withDb(url, async (db) => {
    while (running) {
      const rows = await db.query<{ address: string; age: number }>(
        `SELECT address, EXTRACT(EPOCH FROM NOW() - min(acquired_at))::float8 AS age FROM cluster_locks
         WHERE address = ANY($1) GROUP BY address`,
        [addresses()]
      )
      for (const r of rows.rows) maxAgeS = Math.max(maxAgeS, r.age)
      await sleep(250)
    }
  })
  return {
    stop: async () => {
      running = false
      await done
      return Math.round(maxAgeS * 100) / 100
    }
  }
}

/** Work done twice: a message taken for a dispatch twice or offered to the network twice, an attempt posted twice. */
export const doubleWork = async (db: pg.Client) => {
  const count = async (query: string) => (await db.query(query)).rowCount ?? 0
  return {
    dispatched_twice: await count(`SELECT message_id FROM message_transitions WHERE to_state = 'dispatching'
                                   GROUP BY message_id HAVING count(*) > 1`),
    offered_twice: await count("SELECT message_id FROM sandbox_deliveries WHERE offers > 1"),
    attempts_recorded_twice: await count(
      "SELECT delivery_id FROM webhook_attempts GROUP BY delivery_id, attempt HAVING count(*) > 1"
    )
  }
}

/**
 * Each channel's dispatch rate against its send rate over [fromMs, toMs): messages created in the
 * window, against `dispatching` transitions in the same window shifted by the median dispatch lag.
 * The worst channel's deviation, in percent.
 */
export const channelRates = async (db: pg.Client, fromMs: number, toMs: number) => {
  const lag = (await db.query<{ lag: number }>(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM t.at - m.created_at))::float8 AS lag
     FROM message_transitions t JOIN messages m ON m.id = t.message_id WHERE t.to_state = 'dispatching'`
  )).rows[0]!.lag
  const rows = (await db.query<{ channel_id: string; sent: number; dispatched: number }>(
    `SELECT m.channel_id,
       count(*) FILTER (WHERE m.created_at >= to_timestamp($1 / 1000.0) AND m.created_at < to_timestamp($2 / 1000.0))::int AS sent,
       (SELECT count(*)::int FROM message_transitions t JOIN messages d ON d.id = t.message_id
        WHERE d.channel_id = m.channel_id AND t.to_state = 'dispatching'
          AND t.at >= to_timestamp($1 / 1000.0 + $3) AND t.at < to_timestamp($2 / 1000.0 + $3)) AS dispatched
     FROM messages m WHERE m.direction = 'outbound' GROUP BY m.channel_id`,
    [fromMs, toMs, lag]
  )).rows
  const deviations = rows.map((r) => Math.abs(r.dispatched - r.sent) / Math.max(1, r.sent) * 100)
  return {
    channels: rows.length,
    median_lag_s: Math.round(lag * 100) / 100,
    worst_rate_deviation_pct: Math.round(Math.max(0, ...deviations) * 10) / 10,
    per_channel_sent_min: Math.min(...rows.map((r) => r.sent))
  }
}

/**
 * The shard of a channel's entity: @effect/cluster's `Sharding.getShardId` (a djb2-style string
 * hash, `abs(hash % shards) + 1`, in its internal/hash.ts), as `cluster_locks` names it.
 */
export const shardOf = (entityId: string, shards = SHARDS) => {
  let h = 5381
  for (let i = entityId.length; i;) h = (h * 33) ^ entityId.charCodeAt(--i)
  h = (h & 0xbfffffff) | ((h >>> 1) & 0x40000000)
  return `default:${Math.abs(h % shards) + 1}`
}

/**
 * Who held each shard over time: a fresh lock row's runner, or none (`null`), at each change; and
 * under `runners`, the registered runners with their health flag (`address:healthy`), at each change.
 */
export type ShardOwners = Map<string, Array<{ readonly at: number; readonly owner: string | null }>>

/** Notes each shard's owner (from the lock rows) when it changed since the last look. */
export const noteShardOwners = async (db: pg.Client, owners: ShardOwners) => {
  const now = Date.now()
  const rows = (await db.query<{ shard_id: string; address: string }>(
    `SELECT shard_id, address FROM cluster_locks WHERE acquired_at >= NOW() - make_interval(secs => $1)`,
    [EXPIRY_S]
  )).rows
  const runners = (await db.query<{ address: string; healthy: boolean }>(
    "SELECT address, healthy FROM cluster_runners ORDER BY address"
  )).rows.map((r) => `${r.address}:${r.healthy}`).join(" ")
  const registered = owners.get("runners") ?? []
  if (registered.length === 0 || registered[registered.length - 1]!.owner !== runners) {
    registered.push({ at: now, owner: runners })
  }
  owners.set("runners", registered)
  const held = new Map(rows.map((r) => [r.shard_id, r.address]))
  for (let id = 1; id <= SHARDS; id++) {
    const shard = `default:${id}`
    const owner = held.get(shard) ?? null
    const changes = owners.get(shard) ?? []
    if (changes.length === 0 || changes[changes.length - 1]!.owner !== owner) changes.push({ at: now, owner })
    owners.set(shard, changes)
  }
}

/**
 * The `count` longest dispatch waits of messages created in [fromMs, toMs), each with what its
 * channel's shard went through meanwhile (owner changes, seconds after `zeroMs`) and how many of
 * the channel's messages were dispatched while it waited: what a long wait was made of.
 */
export const worstWaits = async (
  db: pg.Client,
  fromMs: number,
  toMs: number,
  zeroMs: number,
  owners: ShardOwners,
  count = 3
) => {
  const rows = (await db.query<{ channel_id: string; created: number; dispatched: number; others: number }>(
    `WITH worst AS (
       SELECT m.channel_id, m.created_at, t.at FROM message_transitions t JOIN messages m ON m.id = t.message_id
       WHERE t.to_state = 'dispatching' AND m.created_at >= to_timestamp($1 / 1000.0)
         AND m.created_at < to_timestamp($2 / 1000.0)
       ORDER BY t.at - m.created_at DESC LIMIT $3)
     SELECT w.channel_id, EXTRACT(EPOCH FROM w.created_at)::float8 * 1000 AS created,
       EXTRACT(EPOCH FROM w.at)::float8 * 1000 AS dispatched,
       (SELECT count(*)::int FROM message_transitions o JOIN messages om ON om.id = o.message_id
        WHERE om.channel_id = w.channel_id AND o.to_state = 'dispatching' AND o.at > w.created_at AND o.at < w.at) AS others
     FROM worst w ORDER BY w.at - w.created_at DESC`,
    [fromMs, toMs, count]
  )).rows
  const rel = (ms: number) => seconds(ms - zeroMs)
  return rows.map((r) => {
    const shard = shardOf(r.channel_id)
    return {
      wait_s: seconds(r.dispatched - r.created),
      created_s: rel(r.created),
      dispatched_s: rel(r.dispatched),
      // the channel's other messages dispatched meanwhile: 0 = the whole channel stood still
      channel_dispatches_meanwhile: r.others,
      shard,
      owners: (owners.get(shard) ?? [])
        .filter((c) => c.at >= r.created - 10_000 && c.at <= r.dispatched + 1_000)
        .map((c) => ({ at_s: rel(c.at), owner: c.owner }))
    }
  })
}

/** The longest wait for a dispatch of a message created in [fromMs, toMs). */
export const longestWait = async (db: pg.Client, fromMs: number, toMs: number) =>
  (await db.query<{ s: number | null }>(
    `SELECT max(EXTRACT(EPOCH FROM t.at - m.created_at))::float8 AS s
     FROM message_transitions t JOIN messages m ON m.id = t.message_id
     WHERE t.to_state = 'dispatching' AND m.created_at >= to_timestamp($1 / 1000.0)
       AND m.created_at < to_timestamp($2 / 1000.0)`,
    [fromMs, toMs]
  )).rows[0]!.s ?? Number.NaN

/** `processes` busy loops (one per core by default) for `ms`: a CPU hog that ends by itself. */
export const cpuHog = (ms: number, processes = availableParallelism()) => {
  const children = Array.from(
    { length: processes },
    () =>
      spawn(process.execPath, ["-e", `const end = Date.now() + ${ms}; while (Date.now() < end) {}`], {
        stdio: "ignore"
      })
  )
  return {
    stop: async () => {
      await Promise.all(children.map((c) =>
        c.exitCode !== null ? undefined : new Promise<void>((done) => {
          c.once("exit", () => done())
          c.kill("SIGKILL")
        })
      ))
    }
  }
}

/**
 * A log of what happened to the cluster's lock rows, kept by Postgres itself (`lock_log`, in the
 * test's own database): each `DELETE` statement on `cluster_locks` (per runner address: how many
 * rows it deleted, and whether it named shards, a release, or not, a runner's release of all it
 * holds), and each row taken over by another runner (an `UPDATE` changing the row's address: the
 * cluster's acquire does that only to a row older than the lock expiry). What the shard moves
 * were made of, independent of how fast this process looked.
 */
export const logLockChanges = async (db: pg.Client) => {
  await db.query(`
    CREATE TABLE IF NOT EXISTS lock_log (
      at timestamptz NOT NULL DEFAULT clock_timestamp(),
      op text NOT NULL,
      address text NOT NULL,
      new_address text,
      shard_id text,
      rows int NOT NULL,
      named_shards boolean
    );
    CREATE OR REPLACE FUNCTION lock_log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO lock_log (op, address, rows, named_shards)
        SELECT 'delete', address, count(*)::int, current_query() ILIKE '%shard_id%' FROM gone GROUP BY address;
      RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION lock_log_takeover() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO lock_log (op, address, new_address, shard_id, rows) VALUES ('takeover', OLD.address, NEW.address, OLD.shard_id, 1);
      RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS lock_log_delete ON cluster_locks;
    CREATE TRIGGER lock_log_delete AFTER DELETE ON cluster_locks REFERENCING OLD TABLE AS gone
      FOR EACH STATEMENT EXECUTE FUNCTION lock_log_delete();
    DROP TRIGGER IF EXISTS lock_log_takeover ON cluster_locks;
    CREATE TRIGGER lock_log_takeover AFTER UPDATE ON cluster_locks
      FOR EACH ROW WHEN (OLD.address IS DISTINCT FROM NEW.address) EXECUTE FUNCTION lock_log_takeover();
  `)
}

/**
 * The shard releases (`DELETE`s naming shards) from `logLockChanges`: of `address` (else of every
 * runner), rows deleted, in how many statements.
 */
const releases = async (db: pg.Client, address?: string) => {
  const row = (await db.query<{ rows: number; statements: number }>(
    `SELECT coalesce(sum(rows), 0)::int AS rows, count(*)::int AS statements FROM lock_log
     WHERE op = 'delete' AND named_shards AND ($1::text IS NULL OR address = $1)`,
    [address ?? null]
  )).rows[0]!
  return { shards: row.rows, statements: row.statements }
}

/**
 * Polls each running runner's `effect_cluster_shards` every 500 ms until `ok` holds for them, at
 * most `deadlineMs`: the gauges last read, and how long it took (seconds; NaN: never held).
 */
export const gaugesUntil = async (
  stack: ChaosStack,
  ok: (gauges: ReadonlyArray<number>) => boolean,
  deadlineMs = 90_000
) => {
  const from = Date.now()
  let gauges = await shardGauges(stack)
  while (!ok(gauges) && Date.now() - from < deadlineMs) {
    await sleep(500)
    gauges = await shardGauges(stack)
  }
  return { gauges, waited_s: ok(gauges) ? seconds(Date.now() - from) : Number.NaN }
}

export interface ScaleOptions {
  readonly perSecond: number
  /** seconds on one runner, then on three, then on one again */
  readonly phases: readonly [number, number, number]
  /** the added runners boot starved of CPU for this long (test/support/slowBoot.ts) */
  readonly slowBootMs?: number
  readonly log?: (line: string) => void
}

/**
 * Runners 1 -> 3 -> 1 under `perSecond` sends (a stack started with one runner): two runners
 * started, then stopped with SIGTERM. Measures when the shards spread over three runners, when
 * the first runner holds all of them again, and the accounting afterwards.
 */
export const scaleOutIn = async (stack: ChaosStack, options: ScaleOptions) =>
  withDb(stack.databaseUrl, async (db) => {
    const [one, three, after] = options.phases.map((s) => s * 1000) as [number, number, number]
    const log = options.log ?? (() => {})
    const first = stack.runnerInfo.get(stack.runners[0]!)!.address
    await logLockChanges(db)
    const load = startLoad(stack, { perSecond: options.perSecond })
    const loadStart = Date.now()
    await sleep(one)
    // each read of the gauges waits (at most 90 s) for what it expects, not a fixed moment: a runner
    // starved of CPU may miss a lock refresh, give up its shards and take them again seconds later
    const before = await gaugesUntil(stack, (g) => g.length === 1 && g[0] === SHARDS)
    const gaugesBefore = before.gauges
    log(`scale out; shards ${gaugesBefore}`)
    const outAt = Date.now()
    const boot = { slowBootMs: options.slowBootMs ?? 0 }
    const added = [await stack.startRunner(boot), await stack.startRunner(boot)]
    // spread: three runners hold fresh lock rows for every shard
    let joinedAt = Number.NaN
    let registeredAt = Number.NaN
    let spreadAt = Number.NaN
    let rowsSpread: Array<number> = []
    // shards with no fresh lock row (released by their owner, not yet acquired by the next one)
    let unownedSince = Number.NaN
    let unownedMaxMs = 0
    let unownedMost = 0
    // the new runners' boot is not part of the phase: it starts when they hold shards (at most 180 s)
    const owners: ShardOwners = new Map()
    await noteShardOwners(db, owners)
    while (Number.isNaN(spreadAt) ? Date.now() - outAt < 180_000 : Date.now() - spreadAt < three) {
      await noteShardOwners(db, owners)
      const rows = await lockRows(db)
      if (Number.isNaN(joinedAt) && rows.size > 1) joinedAt = Date.now()
      if (Number.isNaN(registeredAt) && (await registeredRunners(db)) > 1) registeredAt = Date.now()
      const total = [...rows.values()].reduce((a, b) => a + b, 0)
      if (total < SHARDS) {
        if (Number.isNaN(unownedSince)) unownedSince = Date.now()
        unownedMaxMs = Math.max(unownedMaxMs, Date.now() - unownedSince)
        unownedMost = Math.max(unownedMost, SHARDS - total)
      } else unownedSince = Number.NaN
      if (Number.isNaN(spreadAt) && rows.size === 3 && total === SHARDS) {
        spreadAt = Date.now()
        rowsSpread = [...rows.values()]
      }
      await sleep(250)
    }
    const spread = await gaugesUntil(
      stack,
      (g) => g.length === 3 && g.every((n) => n > 0) && g.reduce((a, b) => a + b, 0) === SHARDS
    )
    const gaugesSpread = spread.gauges
    log(`scale in; shards ${gaugesSpread}, spread ${spreadAt - outAt} ms`)
    const firstReleases = await releases(db, first)
    const stopped = added.map((r) => stack.runnerInfo.get(r)!.address)
    const inAt = Date.now()
    const exits = Promise.all(added.map((runner) => runner.stop(20_000)))
    let handoverAt = Number.NaN
    while (Date.now() - inAt < after) {
      await noteShardOwners(db, owners)
      if (Number.isNaN(handoverAt) && (await lockRows(db)).get(first) === SHARDS) handoverAt = Date.now()
      await sleep(250)
    }
    await exits
    // a clean stop exits 0; a runner still running after the 20 s grace is killed (SIGKILL)
    const exitCodes = added.map((r) => r.child.exitCode ?? r.child.signalCode)
    const regathered = await gaugesUntil(stack, (g) => g.length === 1 && g[0] === SHARDS)
    const gaugesAfter = regathered.gauges
    // the stopped runners' lock rows: those left in the table, those they deleted themselves, and
    // those another runner took over once they had expired (Postgres' own record, `logLockChanges`)
    const stoppedRowsLeft = (await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM cluster_locks WHERE address = ANY($1)",
      [stopped]
    )).rows[0]!.n
    const stoppedRowsDeleted = (await db.query<{ n: number }>(
      "SELECT coalesce(sum(rows), 0)::int AS n FROM lock_log WHERE op = 'delete' AND address = ANY($1) AND at >= to_timestamp($2 / 1000.0)",
      [stopped, inAt - 1_000]
    )).rows[0]!.n
    const allReleases = await releases(db)
    const takeovers = (await db.query<{ address: string; new_address: string; n: number }>(
      "SELECT address, new_address, count(*)::int AS n FROM lock_log WHERE op = 'takeover' GROUP BY 1, 2"
    )).rows
    await load.stop()
    const loadEnd = Math.max(...load.results.map((r) => r.at))
    log(`settling; handover ${handoverAt - inAt} ms, ${JSON.stringify(tally(load.results))}`)
    const accounting = await settle(stack, accepted(load.results))
    return {
      answers: tally(load.results),
      shards_before: gaugesBefore,
      shards_spread: gaugesSpread,
      shards_after: gaugesAfter,
      // how long each read of the gauges waited for what it expected (a figure, not a bound)
      shards_before_waited_s: before.waited_s,
      shards_spread_waited_s: spread.waited_s,
      shards_after_waited_s: regathered.waited_s,
      lock_rows_spread: rowsSpread,
      // the shards released (DELETEs naming shards) in how many statements, by the first runner
      // until the scale in, and by every runner over the whole run (packages/entities/src/Cluster.ts
      // `batchedRelease`: one statement per shard without it; a runner that took its lock storage
      // for unhealthy deletes all its rows in one statement, not counted here)
      first_runner_releases: firstReleases,
      releases: allReleases,
      // lock rows of the runners stopped with SIGTERM: left in the table after they exited, deleted
      // by themselves; lock rows taken over by another runner after they expired (by old -> new owner)
      stopped_rows_left: stoppedRowsLeft,
      stopped_rows_deleted: stoppedRowsDeleted,
      expired_takeovers: takeovers.reduce((n, t) => n + t.n, 0),
      expired_takeovers_by_owner: takeovers.map((t) => `${t.address} -> ${t.new_address}: ${t.n}`),
      new_runner_registered_s: seconds(registeredAt - outAt),
      new_runner_first_shard_s: seconds(joinedAt - outAt),
      registered_to_first_shard_s: seconds(joinedAt - registeredAt),
      unowned_shards_most: unownedMost,
      unowned_longest_s: seconds(unownedMaxMs),
      spread_s: seconds(spreadAt - outAt),
      spread_after_first_shard_s: seconds(spreadAt - joinedAt),
      handover_s: seconds(handoverAt - inAt),
      scale_in_exit_codes: exitCodes,
      // each runner's "Shard lock storage is unhealthy" (a lock statement slower than the refresh
      // interval: the runner gives up every shard until the storage answers in time again)
      lock_storage_unhealthy: stack.runners.map((r) => r.output().split("Shard lock storage is unhealthy").length - 1),
      longest_wait_scale_out_s: seconds(1000 * await longestWait(db, outAt - 1_000, inAt)),
      longest_wait_scale_in_s: seconds(1000 * await longestWait(db, inAt - 1_000, loadEnd + 1)),
      // seconds after the scale-out began
      worst_waits_scale_out: await worstWaits(db, outAt - 1_000, inAt, outAt, owners),
      runners_seen: (owners.get("runners") ?? []).map((c) => ({ at_s: seconds(c.at - outAt), runners: c.owner })),
      ...await channelRates(db, loadStart + 2_000, loadEnd),
      ...await doubleWork(db),
      ...accounting
    }
  })

export interface PauseOptions {
  readonly perSecond: number
  /** how long the process stays stopped (SIGSTOP), in seconds */
  readonly pauseS: number
  readonly log?: (line: string) => void
}

/**
 * The first of two runners stopped (SIGSTOP) for `pauseS` under sends, then continued: when the
 * other runner held every shard of the paused one, the longest dispatch wait of a message sent
 * around the pause, when the woken runner held shards again, and the accounting afterwards.
 */
export const pausedRunner = async (stack: ChaosStack, options: PauseOptions) =>
  withDb(stack.databaseUrl, async (db) => {
    const log = options.log ?? (() => {})
    const victim = stack.runners[0]!
    const address = stack.runnerInfo.get(victim)!.address
    const load = startLoad(stack, { perSecond: options.perSecond })
    await sleep(4_000)
    const held = async () =>
      (await db.query<{ shard_id: string }>(
        "SELECT shard_id FROM cluster_locks WHERE address = $1 AND acquired_at >= NOW() - make_interval(secs => $2)",
        [address, EXPIRY_S]
      )).rows.map((r) => r.shard_id)
    const victimShards = await held()
    victim.child.kill("SIGSTOP")
    const pausedAt = Date.now()
    log(`paused a runner holding ${victimShards.length} shards`)
    let takenOverAt = Number.NaN
    while (Date.now() - pausedAt < options.pauseS * 1000) {
      const still = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM cluster_locks WHERE address = $1 AND shard_id = ANY($2)",
        [address, victimShards]
      )
      if (Number.isNaN(takenOverAt) && still.rows[0]!.n === 0) takenOverAt = Date.now()
      await sleep(250)
    }
    victim.child.kill("SIGCONT")
    const continuedAt = Date.now()
    log(`continued; taken over after ${takenOverAt - pausedAt} ms`)
    let backAt = Number.NaN
    while (Number.isNaN(backAt) && Date.now() - continuedAt < 20_000) {
      if ((await held()).length > 0) backAt = Date.now()
      else await sleep(250)
    }
    await sleep(Math.max(0, 4_000 - (Date.now() - continuedAt)))
    await load.stop()
    const accounting = await settle(stack, accepted(load.results))
    return {
      answers: tally(load.results),
      paused_s: options.pauseS,
      victim_shards: victimShards.length,
      takeover_s: seconds(takenOverAt - pausedAt),
      longest_wait_s: seconds(1000 * await longestWait(db, pausedAt - 1_000, continuedAt)),
      shards_back_after_wake_s: seconds(backAt - continuedAt),
      ...await doubleWork(db),
      ...accounting
    }
  })

/**
 * The first of two api nodes stopped (SIGSTOP) for `pauseS` under sends from a client that gives
 * up after `timeoutMs` and retries with the same `Idempotency-Key` on the other node (and on a
 * 503 or 409 `in_progress`), then continued: every key must end with one 201 and one message.
 */
export const pausedApi = async (stack: ChaosStack, options: PauseOptions & { readonly timeoutMs: number }) => {
  const log = options.log ?? (() => {})
  const load = startLoad(stack, { perSecond: options.perSecond, retry: true, timeoutMs: options.timeoutMs })
  await sleep(4_000)
  const victim = stack.apis[0]!
  victim.child.kill("SIGSTOP")
  log("paused an api node")
  await sleep(options.pauseS * 1000)
  victim.child.kill("SIGCONT")
  log("continued")
  await sleep(6_000)
  await load.stop()
  const byKey = new Map<string, Array<Sent>>()
  for (const r of load.results) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r])
  const keys = [...byKey.values()]
  const retried = keys.filter((a) => a.length > 1)
  return {
    paused_s: options.pauseS,
    client_timeout_ms: options.timeoutMs,
    keys: byKey.size,
    attempts: tally(load.results),
    keys_retried: retried.length,
    keys_not_accepted: keys.filter((a) => a[a.length - 1]!.status !== 201).length,
    keys_with_two_ids: keys.filter((a) => new Set(a.flatMap((x) => (x.id ? [x.id] : []))).size > 1).length,
    longest_until_accepted_ms: Math.max(0, ...retried.map((a) => a[a.length - 1]!.at + a[a.length - 1]!.ms - a[0]!.at)),
    ...await withDb(stack.databaseUrl, doubleWork),
    ...await settle(stack, accepted(load.results))
  }
}
