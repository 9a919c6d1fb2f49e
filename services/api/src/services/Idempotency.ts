/**
 * `Idempotency-Key` for any mutating use-case (the send's OpenAPI description; README "API"):
 * keys are per workspace and kept 24 h, and each is bound to a fingerprint of the
 * request body (sha256 of its canonical JSON, members sorted at every level).
 *
 * `run` wraps one use-case: it claims the key (or answers 409 for another body or a request still
 * running, or replays the stored response with `Idempotent-Replay: true`), runs the use-case,
 * which stores its response through `complete` INSIDE the transaction that does the work, and
 * releases the key if the use-case fails, so a retry with the same key starts afresh.
 */
import { IdempotencyRepo } from "@switchboard/db"
import { IdempotencyConflict, toTimestamp } from "@switchboard/domain"
import { Clock, Effect, Schema } from "effect"
import { createHash } from "node:crypto"
import { setHeader } from "../ResponseHeaders.js"

const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000
/** A use-case takes milliseconds; a key `running` for this long belongs to a request that died. */
const IDEMPOTENCY_ABANDONED_MS = 60 * 1000

/** Canonical JSON: object keys sorted at every level, so member order does not matter. */
const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(",")}]`
    : value !== null && typeof value === "object"
    ? `{${
      Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
        .join(",")
    }}`
    : JSON.stringify(value)

/** The fingerprint a key is bound to: sha256 (hex) of the body's canonical JSON. */
export const fingerprint = (body: unknown) => createHash("sha256").update(canonical(body)).digest("hex")

export interface IdempotentRequest<A, I> {
  readonly workspaceId: string
  /** the `Idempotency-Key` header; `undefined` runs the use-case as it is */
  readonly key: string | undefined
  /** the request body as decoded by the contract: what the fingerprint is taken of */
  readonly body: unknown
  /** the use-case's response: encoded to be stored, decoded again for a replay */
  readonly response: Schema.Schema<A, I, never>
}

/** Stores the response under the key: call it inside the transaction that does the work. */
export type Complete<A> = (response: A) => Effect.Effect<void>

export class Idempotency extends Effect.Service<Idempotency>()("@switchboard/service-api/Idempotency", {
  effect: Effect.gen(function*() {
    const repo = yield* IdempotencyRepo

    const run = <A, I, E, R>(
      request: IdempotentRequest<A, I>,
      useCase: (complete: Complete<A>) => Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | IdempotencyConflict, R> =>
      Effect.gen(function*() {
        const { key, workspaceId } = request
        if (key === undefined) return yield* useCase(() => Effect.void)
        const nowMs = yield* Clock.currentTimeMillis
        const claim = yield* repo.begin({
          workspaceId,
          key,
          fingerprint: fingerprint(request.body),
          now: toTimestamp(nowMs),
          expiresAt: toTimestamp(nowMs + IDEMPOTENCY_TTL_MS),
          abandonedBefore: toTimestamp(nowMs - IDEMPOTENCY_ABANDONED_MS)
        }).pipe(Effect.orDie)
        switch (claim._tag) {
          case "Replay": {
            const response = yield* Schema.decodeUnknown(request.response)(claim.response).pipe(Effect.orDie)
            yield* setHeader("idempotent-replay", "true")
            return response
          }
          case "Mismatch":
            return yield* new IdempotencyConflict({
              message: "This Idempotency-Key was used with a different body",
              details: { reason: "fingerprint_mismatch" }
            })
          case "InProgress":
            return yield* new IdempotencyConflict({
              message: "A request with this Idempotency-Key is still running",
              details: { reason: "in_progress" }
            })
        }
        const complete: Complete<A> = (response) =>
          Schema.encode(request.response)(response).pipe(
            Effect.flatMap((encoded) => repo.complete(workspaceId, key, encoded)),
            Effect.orDie
          )
        return yield* useCase(complete).pipe(
          Effect.onError(() => repo.release(workspaceId, key).pipe(Effect.ignore))
        )
      }).pipe(Effect.withSpan("Idempotency.run"))

    return { run } as const
  }),
  dependencies: [IdempotencyRepo.Default]
}) {}
