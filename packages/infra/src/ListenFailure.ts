/**
 * A listener that cannot take its port: another process holds it (`EADDRINUSE`), or the port needs
 * a privilege this process lacks (`EACCES`, ports below 1024). The operator reads ONE line saying
 * what went wrong and which setting to change, never the platform's error with its stack trace. Each listener (the HTTP API, the metrics
 * listener, a runner's cluster port) turns its Node error into a `ListenFailure` naming its own
 * setting; every main stops through `logStop`. Any other failure to listen stays as it was.
 */
import { Cause, Data, Effect, Option, Predicate } from "effect"
import * as ConfigFailure from "./ConfigFailure.js"

/** Who listens, for the sentence. */
export interface Listener {
  /** What listens: "HTTP API", "metrics", "cluster" */
  readonly name: string
  /** The setting that chooses its port: "HTTP_PORT" */
  readonly portSetting: string
}

export type Reason = "in-use" | "denied"

export class ListenFailure extends Data.TaggedError("ListenFailure")<{
  readonly listener: Listener
  readonly host: string
  readonly port: number
  readonly reason: Reason
  /** The one line an operator reads */
  readonly message: string
}> {}

const reasonOf = (code: unknown): Reason | undefined =>
  code === "EADDRINUSE" ? "in-use" : code === "EACCES" ? "denied" : undefined

/** The sentence for `reason`: what went wrong, then what to do. */
export const sentence = (listener: Listener, host: string, port: number, reason: Reason): string => {
  const where = `${host.includes(":") ? `[${host}]` : host}:${port}`
  const why = reason === "in-use"
    ? `the port is in use by another process (set ${listener.portSetting} to another port, or stop the other process)`
    : `this process may not listen on that port: ports below 1024 need privileges (set ${listener.portSetting} ` +
      "to 1024 or above, or give the process the CAP_NET_BIND_SERVICE capability)"
  return `cannot listen on ${where} (${listener.name}): ${why}`
}

const field = (value: unknown, name: string): unknown =>
  Predicate.isObject(value) && name in value ? (value as Record<string, unknown>)[name] : undefined

/** Node's listen error, itself or as the `cause` of the platform's (`ServeError`, `SocketServerError`). */
const listenError = (error: unknown) => field(error, "syscall") === "listen" ? error : field(error, "cause")

/** The `ListenFailure` for `error` when it is a busy or forbidden port; none for any other error. */
export const fromError = (error: unknown, listener: Listener): Option.Option<ListenFailure> => {
  const cause = listenError(error)
  const reason = reasonOf(field(cause, "code"))
  const host = field(cause, "address")
  const port = field(cause, "port")
  if (field(cause, "syscall") !== "listen" || reason === undefined) return Option.none()
  if (typeof host !== "string" || typeof port !== "number") return Option.none()
  return Option.some(
    new ListenFailure({ listener, host, port, reason, message: sentence(listener, host, port, reason) })
  )
}

/** `error` as its `ListenFailure` when it is one, unchanged otherwise (for `Layer.mapError`). */
export const refine = (listener: Listener) => <E>(error: E): E | ListenFailure =>
  Option.getOrElse(fromError(error, listener), () => error)

/** Every `ListenFailure` in `cause`, failed or died with. */
export const inCause = (cause: Cause.Cause<unknown>): ReadonlyArray<ListenFailure> =>
  [...Cause.failures(cause), ...Cause.defects(cause)].filter((e): e is ListenFailure => e instanceof ListenFailure)

/**
 * The one-line refusals in `cause`, failed or died with: an error tagged `StartupRefusal` with its
 * `message` (e.g. a pool the Postgres server cannot hold, `@switchboard/db` `ConnectionBudget`).
 */
export const refusalsIn = (cause: Cause.Cause<unknown>): ReadonlyArray<string> =>
  [...Cause.failures(cause), ...Cause.defects(cause)].flatMap((e) =>
    Predicate.isTagged(e, "StartupRefusal") && Predicate.hasProperty(e, "message") && typeof e.message === "string"
      ? [e.message]
      : []
  )

/**
 * What a main logs when it stops on `cause` (with `runMain`'s own reporting off): a listener's
 * failure, a setting it cannot read (`ConfigFailure`) or a refusal (`refusalsIn`), as its one line; anything else as
 * `runMain` would log it; an interruption not at all.
 */
export const logStop = (cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  const lines = [
    ...inCause(cause).map((failure) => failure.message),
    ...ConfigFailure.linesOf(cause),
    ...refusalsIn(cause)
  ]
  return lines.length === 0
    ? Effect.logError(cause)
    : Effect.forEach(lines, (line) => Effect.logError(line), { discard: true })
}
