/**
 * Which database failures are passing (SQLSTATE and connection errors), for the one place that
 * answers them (`ErrorMapping.ts`): 503 `SERVICE_UNAVAILABLE` when the database cannot be reached
 * or refused a statement for a passing reason, 500 for anything else (docs/ARCHITECTURE.md,
 * "One policy for database errors").
 */
import { Predicate } from "effect"

const CONNECTIVITY_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "57P01",
  "57P03",
  "08006",
  "08001",
  "08003"
])

/**
 * A database that cannot be reached, as opposed to a bug. The one place that decides a 503 for
 * the database: repositories turn every `SqlError` into a defect at their boundary (db
 * `Rows.ts`), services and the authentication middleware let it through, and it ends here.
 * The client could not get a connection at all (the database refuses or is gone), lost one, or
 * the server said it is shutting down or unreachable.
 */
export const isConnectivityFailure = (defect: unknown): boolean => {
  if (!Predicate.isTagged(defect, "SqlError")) return false
  const error = defect as { message?: string; cause?: { code?: string; message?: string } }
  const cause = error.cause
  return /^(Failed to acquire connection|Connection error)/.test(String(error.message ?? "")) ||
    (cause?.code !== undefined && CONNECTIVITY_CODES.has(cause.code)) ||
    /Connection terminated|connect ECONNREFUSED|timeout/i.test(String(cause?.message ?? ""))
}

/**
 * Statements Postgres refused for a passing reason: a deadlock (40P01), a serialization failure
 * (40001), a lock not available (55P03), a statement cancelled (57014). The transaction rolled
 * back, so the request changed nothing and a retry (with the same Idempotency-Key) is safe: 503,
 * not 500.
 */
const TRANSIENT_CODES = new Set(["40P01", "40001", "55P03", "57014"])

export const isTransientDatabaseFailure = (defect: unknown): boolean =>
  Predicate.isTagged(defect, "SqlError") &&
  TRANSIENT_CODES.has(String((defect as { cause?: { code?: unknown } }).cause?.code ?? ""))
