/**
 * Helpers shared by repositories, and the one policy for database failures.
 *
 * Every repository method ends with `dieOnDatabaseError`: a passing `SqlError` (the database could
 * not be reached, dropped the connection, is shutting down or overloaded, or refused the statement
 * for now: a deadlock, a serialization failure, a lock or statement timeout) fails with the typed
 * `DatabaseUnavailable` (`DatabaseUnavailable.ts` decides which), so a caller that means to survive
 * it retries it (`TransientRetry`, the runner's one policy); any other `SqlError` and a
 * `ParseError` (a row that does not match its schema) are bugs, defects at the repo's boundary.
 * The HTTP edge answers `DatabaseUnavailable` 503 SERVICE_UNAVAILABLE in one place (services/api
 * `ErrorMapping.ts`, with `DatabaseFailures.ts`), 500 for a defect. The other failure a caller can
 * act on, a duplicate key, is the typed `UniqueViolation` (`failOnUniqueViolation`).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Ids } from "@switchboard/domain"
import type { ParseResult } from "effect"
import { Data, Effect, Predicate, Schema } from "effect"
import { classify, type DatabaseUnavailable } from "./DatabaseUnavailable.js"

/** A timestamptz column (a `Date` from the driver) as the wire's ISO string. */
export const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString()

export const isoOrNull = (value: Date | string | null | undefined): string | null =>
  value === null || value === undefined ? null : iso(value)

/** A timestamptz column as the driver returns it (a `Date`; a string from a JSON aggregate). */
export const TimestampColumn = Schema.Union(Schema.DateFromSelf, Schema.String)

/** A number column: `int` arrives as a number, `bigint` and `numeric` (a `sum`) as its digits. */
export const NumberColumn = Schema.Union(Schema.Number, Schema.NumberFromString)

/** `count(*)::int AS n` */
export const CountRow = Schema.Struct({ n: Schema.Number })

/**
 * The decoder of a statement's rows: every row checked against `schema` and typed as its `Type`
 * (ids branded, literals narrowed). A row that does not match is a `ParseError`, which the repo's
 * boundary (`dieOnDatabaseError`) makes a defect: never a cast that lets a wrong row through.
 * Make it once, at module level, and decode only the columns the caller reads.
 */
export const decodeRows = <A, I>(schema: Schema.Schema<A, I>) => Schema.decodeUnknown(Schema.Array(schema))

/** `RETURNING id` or `SELECT id` of a table whose ids have the prefix `prefix` (`msg`, `cnt`, ...). */
export const IdRow = <const P extends Ids.IdPrefix>(prefix: P) => Schema.Struct({ id: Ids.Id(prefix) })

/** Whether a failure is Postgres refusing a duplicate (unique_violation). */
export const isUniqueViolation = (error: unknown): boolean => {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause
  return cause?.code === "23505"
}

/** An insert or update refused because a unique key is taken; the service names the conflict. */
export class UniqueViolation extends Data.TaggedError("UniqueViolation")<{}> {}

type DatabaseError = SqlError | ParseResult.ParseError

const isDatabaseError = (error: unknown): error is DatabaseError =>
  Predicate.isTagged(error, "SqlError") || Predicate.isTagged(error, "ParseError")

/** A database failure as the repo's caller sees it: a passing one typed, anything else a defect. */
const transientOrDie = (error: DatabaseError): Effect.Effect<never, DatabaseUnavailable> => {
  const unavailable = classify(error)
  return unavailable === undefined ? Effect.die(error) : Effect.fail(unavailable)
}

/** The repo boundary: a passing failure is `DatabaseUnavailable`, any other a defect (see the module comment). */
export const dieOnDatabaseError = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, DatabaseError> | DatabaseUnavailable, R> =>
  Effect.catchIf(
    self,
    (error): error is Extract<E, DatabaseError> => isDatabaseError(error),
    (error) => transientOrDie(error)
  ) as Effect.Effect<A, Exclude<E, DatabaseError> | DatabaseUnavailable, R>

/** Like `dieOnDatabaseError`, but a duplicate key fails with `UniqueViolation`. */
export const failOnUniqueViolation = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, DatabaseError> | UniqueViolation | DatabaseUnavailable, R> =>
  Effect.catchIf(
    self,
    (error): error is Extract<E, DatabaseError> => isDatabaseError(error),
    (error): Effect.Effect<never, UniqueViolation | DatabaseUnavailable> =>
      isUniqueViolation(error) ? Effect.fail(new UniqueViolation()) : transientOrDie(error)
  ) as Effect.Effect<A, Exclude<E, DatabaseError> | UniqueViolation | DatabaseUnavailable, R>
