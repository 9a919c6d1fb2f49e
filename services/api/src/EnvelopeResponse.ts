/**
 * The error envelope as a response, for answers made outside the builder's encoder: the body
 * guards (`BodyGuard`), the router's 404 and 405 (`ErrorMapping`), paths refused before routing
 * (`ServeMiddleware`).
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"

interface EnvelopeClass {
  readonly status: number
}

/** Writes `error` with its class's status and `headers`. */
export const envelopeResponse = <E extends { readonly message: string }, I>(
  cls: Schema.Schema<E, I, never> & EnvelopeClass,
  error: E,
  headers?: Record<string, string>
) =>
  Effect.orDie(HttpServerResponse.json(Schema.encodeSync(cls)(error), { status: cls.status, headers: headers ?? {} }))
