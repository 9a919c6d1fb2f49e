/**
 * Server-side prepared statements for the statements a process runs again and again.
 *
 * `@effect/sql-pg` sends every statement unnamed, so Postgres parses, analyses and plans it on
 * every execution. For our one-statement writes (a message's move with its timeline row, event and
 * webhook fan-out; a send's writes) that planning is a large share of what the database spends on
 * them (docs/ARCHITECTURE.md "Prepared statements"). This `pg` client class counts, per connection, how often it
 * has been given each statement text; from the `threshold`-th time on it sends that text as a
 * named statement, which Postgres parses once per connection and, after a few executions, runs
 * with a cached generic plan when that plan is no worse than planning each time. The same rule
 * as pgjdbc's `prepareThreshold`.
 *
 * - Only statements with parameters are named: the statement texts are our code's, values are
 *   always parameters, so a text that repeats is one of our statements, never a value.
 * - At most `MAX_NAMED` statements per connection, and the counts are forgotten past
 *   `MAX_COUNTED` distinct texts, so memory stays bounded on either side of the wire.
 * - A statement Postgres refuses to re-run from its cache (its result type changed under it, SQLSTATE
 *   0A000: a migration altered a table while this process ran) is sent unnamed from then on, and
 *   the refused execution is retried unnamed at once when it was not inside a transaction (the
 *   connection reports it idle); inside one, the transaction fails as on any error.
 * - `threshold` 0 turns it off: a pooler in transaction mode that does not track prepared
 *   statements (PgBouncer before 1.21) needs that.
 */
import pg from "pg"

/** Named statements per connection, at most */
export const MAX_NAMED = 256
/** Distinct statement texts counted per connection before the counts start again */
export const MAX_COUNTED = 4096

type Callback = (error: (Error & { readonly code?: string }) | null, result: unknown) => void
/** `pg.Client#query` in the form `@effect/sql-pg` calls it, and every other form passed through */
type Query = (config: unknown, values?: unknown, callback?: unknown) => unknown

/** A `pg.Client` class that prepares statements seen `threshold` times (0: the plain client). */
export const clientClass = (threshold: number): typeof pg.Client => {
  if (threshold <= 0) return pg.Client
  class PreparingClient extends pg.Client {
    readonly #seen = new Map<string, number>()
    /** text -> statement name; `null`: never name this text again on this connection */
    readonly #names = new Map<string, string | null>()

    constructor(config?: string | pg.ClientConfig) {
      super(config)
      // pg's overloads cannot be restated by a subclass method: the instance's `query` is replaced,
      // and every form but (text, values, callback) goes to the plain one unchanged
      const plain = (pg.Client.prototype.query as unknown as Query).bind(this)
      const query: Query = (config, values, callback) => {
        if (
          typeof config !== "string" || !Array.isArray(values) || values.length === 0 ||
          typeof callback !== "function"
        ) return plain(config, values, callback)
        const name = this.#nameFor(config)
        if (name === undefined) return plain(config, values, callback)
        const done = callback as Callback
        const named: Callback = (error, result) => {
          if (error?.code !== "0A000") return done(error, result)
          this.#names.set(config, null)
          if (this.getTransactionStatus() !== "I") return done(error, result)
          plain(config, values, done)
        }
        return plain({ name, text: config, values }, named)
      }
      Object.defineProperty(this, "query", { value: query, writable: true, configurable: true })
    }

    #nameFor(text: string): string | undefined {
      const known = this.#names.get(text)
      if (known !== undefined) return known ?? undefined
      if (this.#names.size >= MAX_NAMED) return undefined
      const count = (this.#seen.get(text) ?? 0) + 1
      if (count < threshold) {
        if (this.#seen.size >= MAX_COUNTED) this.#seen.clear()
        this.#seen.set(text, count)
        return undefined
      }
      this.#seen.delete(text)
      const name = `sb_${this.#names.size + 1}`
      this.#names.set(text, name)
      return name
    }
  }
  return PreparingClient as unknown as typeof pg.Client
}
