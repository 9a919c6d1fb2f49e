/**
 * The database pool as metrics (docs/OPERATING.md "Metrics"): connections in use and idle,
 * requests waiting for one, and the pool's size, sampled every second from `pg`'s own counters
 * (in memory: no query). Requests waiting for long mean `DATABASE_POOL_SIZE` is too small, or
 * the database too slow.
 */
import { Effect, Metric } from "effect"
import type pg from "pg"

export const connections = Metric.gauge("switchboard_db_pool_connections", {
  description: "Database connections of this process's pool, by state (in_use, idle)"
})

export const waiting = Metric.gauge("switchboard_db_pool_waiting", {
  description: "Queries waiting for a database connection of this process's pool"
})

export const size = Metric.gauge("switchboard_db_pool_max", {
  description: "Largest number of connections this process's pool opens (DATABASE_POOL_SIZE; 1 embedded)"
})

const inUse = Metric.tagged(connections, "state", "in_use")
const idle = Metric.tagged(connections, "state", "idle")

/** One sample of `pool`. */
export const sample = (pool: pg.Pool, max: number) =>
  Effect.all([
    Metric.set(inUse, Math.max(0, pool.totalCount - pool.idleCount)),
    Metric.set(idle, pool.idleCount),
    Metric.set(waiting, pool.waitingCount),
    Metric.set(size, max)
  ], { discard: true })

/**
 * Samples `pool` every second of real time for as long as the scope lasts. A Node timer, not an
 * Effect schedule: the pool lives in real time, and a test's `TestClock` jumping a year forward
 * must not replay a year of samples (it hung those tests).
 */
export const sampleEverySecond = (pool: pg.Pool, max: number) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const run = () => Effect.runSync(sample(pool, max))
      run()
      const timer = setInterval(run, 1000)
      timer.unref()
      return timer
    }),
    (timer) => Effect.sync(() => clearInterval(timer))
  )
