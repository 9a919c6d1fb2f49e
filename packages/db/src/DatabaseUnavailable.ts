/**
 * The one typed database failure a caller may retry: `DatabaseUnavailable`. A statement that did
 * not run, or was rolled back, for a passing reason: the server could not be reached or dropped
 * the connection, is shutting down or starting, has no connection, memory or disk to spare, chose
 * this transaction as a deadlock or serialization victim, or cancelled it (statement or lock
 * timeout); or the pool could not hand out a connection. Nothing the statement meant to change
 * was changed, so running it again is safe. Everything else a database reports (a constraint that
 * should never fail, bad SQL, a row that does not decode) is a bug and stays a defect
 * (`Rows.ts`). `classify` is the one decision, a pure function of the driver's error.
 */
import { Effect, Predicate, Schema, Stream } from "effect"

/** Why a statement did not run, in the terms an operator reads in a log line. */
export const Reason = Schema.Literal(
  "unreachable", // refused, reset, timed out, terminated, no connection from the pool
  "shutting_down", // 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now
  "overloaded", // class 53: too many connections, out of memory, disk full, limits
  "conflict", // class 40: serialization failure, deadlock
  "cancelled" // 57014 statement timeout or cancel, 55P03 lock timeout
)
export type Reason = typeof Reason.Type

export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  reason: Reason,
  /** the SQLSTATE or the driver's error code, when there is one (never the statement or its values) */
  code: Schema.optional(Schema.String),
  /** the driver's error, for the log; never put in a response */
  cause: Schema.optional(Schema.Defect)
}) {
  override get message() {
    return `database unavailable (${this.reason}${this.code === undefined ? "" : `, ${this.code}`})`
  }
}

/** SQLSTATEs that are passing, one by one (classes 08, 40 and 53 are passing as a whole, but 40002). */
const SQLSTATE_REASONS: Readonly<Record<string, Reason>> = {
  "57P01": "shutting_down",
  "57P02": "shutting_down",
  "57P03": "shutting_down",
  "57P05": "unreachable", // idle session timeout: the server closed the connection
  "25P03": "unreachable", // idle in transaction timeout: the server closed the connection
  "57014": "cancelled",
  "55P03": "cancelled"
}

const sqlstateReason = (code: string): Reason | undefined => {
  const known = SQLSTATE_REASONS[code]
  if (known !== undefined) return known
  if (code.startsWith("08")) return "unreachable"
  // 40002 is a deferred constraint that failed at commit: a bug, not a passing conflict
  if (code.startsWith("40") && code !== "40002") return "conflict"
  if (code.startsWith("53")) return "overloaded"
  return undefined
}

/** Node's socket errors: the server is not there, went away, or did not answer. */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN"
])

/**
 * The `pg` driver's and pool's own words for a lost or unobtainable connection (they carry no
 * code), and PGlite's socket server's (embedded mode) when its one connection is taken or gone.
 */
const DRIVER_MESSAGES =
  /Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect|Query read timeout|Connection timed out|connect ECONNREFUSED|read ECONNRESET|Cannot use a pool after calling end|too many clients/i

/** `@effect/sql-pg`'s messages for a connection the pool could not give. */
const ACQUIRE_MESSAGES = /^(Failed to acquire connection|Connection error|PgClient: Failed to connect)/

const SQLSTATE = /^[0-9A-Z]{5}$/

interface DriverError {
  readonly code?: unknown
  readonly message?: unknown
  readonly errno?: unknown
}

/**
 * Whether a database failure is passing: a `DatabaseUnavailable` naming why, or `undefined` for a
 * bug. Takes an `SqlError` (its `cause` is the driver's error) or the driver's error itself.
 */
export const classify = (error: unknown): DatabaseUnavailable | undefined => {
  if (error instanceof DatabaseUnavailable) return error
  const outer = error as { message?: unknown; cause?: unknown } | undefined
  const driver: DriverError | undefined = Predicate.isTagged(error, "SqlError")
    ? outer?.cause as DriverError | undefined
    : error as DriverError | undefined
  const code = typeof driver?.code === "string" ? driver.code : undefined
  const outerMessage = Predicate.isTagged(error, "SqlError") && typeof outer?.message === "string" ? outer.message : ""
  const acquiring = ACQUIRE_MESSAGES.test(outerMessage)
  if (code !== undefined) {
    // Node's codes first: EPIPE has a SQLSTATE's shape
    const reason = SOCKET_CODES.has(code) ? "unreachable" : SQLSTATE.test(code) ? sqlstateReason(code) : undefined
    if (reason !== undefined) return new DatabaseUnavailable({ reason, code, cause: error })
    // a SQLSTATE we did not list is the server saying what is wrong: a bug; but while connecting,
    // only wrong credentials (class 28) or a database that does not exist (3D000) are (a database
    // not accepting connections for now, 55000, is passing)
    if (SQLSTATE.test(code) && (!acquiring || code.startsWith("28") || code === "3D000")) return undefined
  }
  const driverMessage = typeof driver?.message === "string" ? driver.message : ""
  if (acquiring || DRIVER_MESSAGES.test(driverMessage)) {
    return new DatabaseUnavailable({ reason: "unreachable", ...(code === undefined ? {} : { code }), cause: error })
  }
  return undefined
}

export const isDatabaseUnavailable = (u: unknown): u is DatabaseUnavailable =>
  Predicate.isTagged(u, "DatabaseUnavailable")

/**
 * Where a caller has no use for the typed failure (the API's handlers answer it 503 from the one
 * place that maps defects, an RPC whose protocol declares no such failure): it becomes a defect
 * again, still a `DatabaseUnavailable`. Never before a retry: see `TransientRetry`.
 */
export const dieWhenUnavailable = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, DatabaseUnavailable>, R> =>
  Effect.catchIf(
    self,
    (error): error is Extract<E, DatabaseUnavailable> => isDatabaseUnavailable(error),
    (error) => Effect.die(error)
  ) as Effect.Effect<A, Exclude<E, DatabaseUnavailable>, R>

/** `dieWhenUnavailable` for a stream. */
export const dieWhenUnavailableStream = <A, E, R>(
  self: Stream.Stream<A, E, R>
): Stream.Stream<A, Exclude<E, DatabaseUnavailable>, R> =>
  Stream.catchAll(
    self,
    (error) => isDatabaseUnavailable(error) ? Stream.die(error) : Stream.fail(error as Exclude<E, DatabaseUnavailable>)
  )
