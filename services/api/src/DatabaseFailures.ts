/**
 * The API's answer to a passing database failure (docs/ARCHITECTURE.md, "One policy for database
 * errors"): the repositories fail with the typed `DatabaseUnavailable` (db `DatabaseUnavailable.ts`
 * decides which failures are passing), the handlers' services hand it on as a defect
 * (`unavailableAsDefect`, since no endpoint declares it), and `ErrorMapping.ts` answers it 503
 * `SERVICE_UNAVAILABLE`. A database failure that is not passing stays a defect: 500.
 */
import { DatabaseUnavailable } from "@switchboard/db"
import { Effect, Either, Exit, Option, Predicate, Stream } from "effect"

/**
 * The passing database failure in a defect, if it is one: a `DatabaseUnavailable`, or an
 * `SqlError` that escaped a repository (a statement run outside one) and classifies as passing.
 */
export const unavailableIn = (defect: unknown): DatabaseUnavailable.DatabaseUnavailable | undefined =>
  DatabaseUnavailable.isDatabaseUnavailable(defect)
    ? defect
    : Predicate.isTagged(defect, "SqlError")
    ? DatabaseUnavailable.classify(defect)
    : undefined

/**
 * The statement ran and was refused for a passing reason (a deadlock, a serialization failure, a
 * lock or statement timeout): the transaction rolled back, so a retry with the same
 * Idempotency-Key is safe. Otherwise the database could not be reached at all.
 */
export const isRefusedForNow = (unavailable: DatabaseUnavailable.DatabaseUnavailable): boolean =>
  unavailable.reason === "conflict" || unavailable.reason === "cancelled"

type Unavailable = DatabaseUnavailable.DatabaseUnavailable

/** A service's member, its `DatabaseUnavailable` a defect. */
type AsDefect<F> = F extends (...args: infer P) => Effect.Effect<infer A, infer E, infer R>
  ? (...args: P) => Effect.Effect<A, Exclude<E, Unavailable>, R>
  : F extends (...args: infer P) => Stream.Stream<infer A, infer E, infer R>
    ? (...args: P) => Stream.Stream<A, Exclude<E, Unavailable>, R>
  : F extends Effect.Effect<infer A, infer E, infer R> ? Effect.Effect<A, Exclude<E, Unavailable>, R>
  : F

/** An effect or a stream run by a service's member, its `DatabaseUnavailable` a defect; any other value as it is. */
const asDefect = (value: unknown): unknown => {
  // an Option, an Either or an Exit is an effect too, but a value here
  if (Option.isOption(value) || Either.isEither(value) || Exit.isExit(value)) return value
  // (an effect carries the stream's type id as well: effects first)
  if (Effect.isEffect(value)) return DatabaseUnavailable.dieWhenUnavailable(value)
  if (Stream.StreamTypeId in Object(value)) {
    return DatabaseUnavailable.dieWhenUnavailableStream(value as Stream.Stream<unknown, unknown, unknown>)
  }
  return value
}

/**
 * A service as the handlers use it: each method's `DatabaseUnavailable` becomes a defect, which
 * `ErrorMapping.ts` answers 503 (the endpoints' declared errors stay what the contract says).
 */
export const unavailableAsDefect = <S extends object>(service: S): { readonly [K in keyof S]: AsDefect<S[K]> } =>
  new Proxy(service, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver)
      if (typeof value !== "function") return asDefect(value)
      return (...args: Array<unknown>) => asDefect(value.apply(target, args))
    }
  }) as never
