/**
 * `Idempotency-Key` for any mutating use-case (the send's OpenAPI description; docs/API.md):
 * keys are per workspace and kept 24 h, and each is bound to a fingerprint of the
 * request body (sha256 of its canonical JSON, members sorted at every level).
 *
 * `run` wraps one use-case: it claims the key (or answers 409 for another body or a request still
 * running, or replays the stored response with `Idempotent-Replay: true`), runs the use-case,
 * which stores its response through `complete` INSIDE the transaction that does the work (or, a
 * use-case whose work is one statement, in that statement: `HeldClaim`), and releases the key if
 * the use-case fails, so a retry with the same key starts afresh.
 *
 * A claim is a lease (docs/RETRIES.md "Requests: idempotency"): the request renews it every few
 * seconds while it runs, so a retry after the request's process died gets the key within
 * `CLAIM_LEASE_MS` instead of 409 `in_progress` for a minute. A request that stalled past its
 * lease while a retry took the key over cannot complete: its transaction rolls back with 409
 * `in_progress`, so a key still leads to exactly one result.
 */
import { IdempotencyRepo } from "@switchboard/db"
import { Errors, Schemas } from "@switchboard/domain"
import { Clock, Duration, Effect, Fiber, Schedule, Schema } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { setHeader } from "../ResponseHeaders.js"

const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000
/** A claim not renewed for this long belongs to a request that died: a retry takes it over. */
export const CLAIM_LEASE_MS = 10_000
/** How often a running request renews its claim: three renewals fit in a lease. */
const CLAIM_RENEW_MS = CLAIM_LEASE_MS / 4

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

/**
 * Stores the response under the key: call it inside the transaction that does the work. It fails
 * (and the transaction must roll back) when this request lost its claim to a retry.
 */
export type Complete<A> = (response: A) => Effect.Effect<void, Errors.IdempotencyConflict>

/**
 * The claim a use-case holds, for a use-case that stores its response in its own statement
 * instead of calling `Complete` (the send's writes): the claim, the response as stored, and the
 * failure to end with when that statement found the claim taken over.
 */
export interface HeldClaim<A> {
  readonly ref: IdempotencyRepo.ClaimRef
  readonly encode: (response: A) => Effect.Effect<unknown>
  readonly takenOver: () => Errors.IdempotencyConflict
}

const takenOver = () =>
  new Errors.IdempotencyConflict({
    message: "A retry with this Idempotency-Key took it over while this request was stalled; retry to get its result",
    details: { reason: "in_progress" }
  })

export class Idempotency extends Effect.Service<Idempotency>()("@switchboard/service-api/Idempotency", {
  effect: Effect.gen(function*() {
    const repo = yield* IdempotencyRepo.IdempotencyRepo

    const run = <A, I, E, R>(
      request: IdempotentRequest<A, I>,
      useCase: (complete: Complete<A>, held: HeldClaim<A> | undefined) => Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | Errors.IdempotencyConflict, R> =>
      Effect.gen(function*() {
        const { key, workspaceId } = request
        if (key === undefined) return yield* useCase(() => Effect.void, undefined)
        const nowMs = yield* Clock.currentTimeMillis
        const ref = { workspaceId, key, claimId: randomUUID() }
        const claim = yield* repo.begin({
          ...ref,
          fingerprint: fingerprint(request.body),
          now: Schemas.toTimestamp(nowMs),
          expiresAt: Schemas.toTimestamp(nowMs + IDEMPOTENCY_TTL_MS),
          leaseUntil: Schemas.toTimestamp(nowMs + CLAIM_LEASE_MS)
        }).pipe(Effect.orDie)
        switch (claim._tag) {
          case "Replay": {
            const response = yield* Schema.decodeUnknown(request.response)(claim.response).pipe(Effect.orDie)
            yield* setHeader("idempotent-replay", "true")
            return response
          }
          case "Mismatch":
            return yield* new Errors.IdempotencyConflict({
              message: "This Idempotency-Key was used with a different body",
              details: { reason: "fingerprint_mismatch" }
            })
          case "InProgress":
            return yield* new Errors.IdempotencyConflict({
              message: "A request with this Idempotency-Key is still running",
              details: { reason: "in_progress" }
            })
        }
        const encode = (response: A) => Effect.orDie(Schema.encode(request.response)(response))
        const complete: Complete<A> = (response) =>
          encode(response).pipe(
            Effect.flatMap((encoded) => repo.complete(ref, encoded)),
            Effect.orDie,
            Effect.flatMap((completed) => completed ? Effect.void : Effect.fail(takenOver()))
          )
        // renews the lease until the use-case ends. A renewal that fails (whatever the cause: a
        // database away, a defect) or hangs is tried again at the next tick; three ticks fit in a
        // lease, so one or two lost renewals never free the key while the request runs. Should
        // the lease still run out, a retry takes the key over and this request is fenced: its
        // `complete` fails and its transaction rolls back (`takenOver`).
        const renewOnce = Clock.currentTimeMillis.pipe(
          Effect.flatMap((at) => repo.renew(ref, Schemas.toTimestamp(at + CLAIM_LEASE_MS))),
          Effect.timeout(Duration.millis(CLAIM_RENEW_MS)),
          Effect.catchAllCause((cause) =>
            Effect.logWarning("idempotency lease not renewed; trying again at the next tick", cause)
          )
        )
        // (at fixed ticks: a renewal that hung until its timeout does not push the next one late)
        const renewals = yield* renewOnce.pipe(
          Effect.repeat(Schedule.fixed(Duration.millis(CLAIM_RENEW_MS))),
          Effect.delay(Duration.millis(CLAIM_RENEW_MS)),
          Effect.fork
        )
        return yield* useCase(complete, { ref, encode, takenOver }).pipe(
          Effect.onError(() => repo.release(ref).pipe(Effect.ignore)),
          Effect.ensuring(Fiber.interrupt(renewals))
        )
      }).pipe(Effect.withSpan("Idempotency.run"))

    return { run } as const
  }),
  dependencies: [IdempotencyRepo.IdempotencyRepo.Default]
}) {}
