/**
 * Helpers shared by repositories, and the one policy for database failures.
 *
 * Every repository method ends with `dieOnDatabaseError`: a `SqlError` (the database refused or
 * could not be reached) or a `ParseError` (a row that does not match its schema) is a defect at
 * the repo's boundary, so no service handles either. The HTTP edge decides the answer in one
 * place (services/api `ErrorMapping.ts`, with `DatabaseFailures.ts`): 503 SERVICE_UNAVAILABLE
 * when the database is unreachable or refused a statement for a passing reason, 500 for anything
 * else. The one failure a caller can act on, a duplicate key, is
 * the typed `UniqueViolation` (`failOnUniqueViolation`).
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { ParseResult } from "effect"
import { Data, Effect, Predicate, Schema } from "effect"

/** A timestamptz column (a `Date` from the driver) as the wire's ISO string. */
export const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString()

export const isoOrNull = (value: Date | string | null | undefined): string | null =>
  value === null || value === undefined ? null : iso(value)

/** A timestamptz column as the driver returns it (a `Date`; a string from a JSON aggregate). */
export const TimestampColumn = Schema.Union(Schema.DateFromSelf, Schema.String)

/** `count(*)::int AS n` */
export const CountRow = Schema.Struct({ n: Schema.Number })

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

/** The repo boundary: database failures become defects (see the module comment). */
export const dieOnDatabaseError = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, DatabaseError>, R> =>
  Effect.catchIf(
    self,
    (error): error is Extract<E, DatabaseError> => isDatabaseError(error),
    (error) => Effect.die(error)
  ) as Effect.Effect<A, Exclude<E, DatabaseError>, R>

/** Like `dieOnDatabaseError`, but a duplicate key fails with `UniqueViolation`. */
export const failOnUniqueViolation = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, DatabaseError> | UniqueViolation, R> =>
  Effect.catchIf(
    self,
    (error): error is Extract<E, DatabaseError> => isDatabaseError(error),
    (error) => isUniqueViolation(error) ? Effect.fail(new UniqueViolation()) : Effect.die(error)
  ) as Effect.Effect<A, Exclude<E, DatabaseError> | UniqueViolation, R>
