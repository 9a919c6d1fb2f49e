/**
 * One entity per webhook endpoint: pulls its due deliveries (oldest first), keeps at most
 * `maxInFlight` attempts running (a freed slot is refilled at once), re-checks the target
 * address at EVERY attempt and connects to the checked address (keeping its connections open while
 * the check gives the same address), signs with every active secret, and records each attempt
 * with the delivery's next state (decided by the domain's `nextDeliveryState`) and the endpoint's failure counter atomically (the counter update
 * is serialised on the endpoint row). Rows are the queue; wake-ups are volatile.
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Transactions, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import { Schemas, Webhooks } from "@switchboard/domain"
import { SafeEgress, UrlPolicy, WebhooksConfig, WebhookSigner } from "@switchboard/webhooks"
import { Clock, Effect, Layer, Metric, Option, Queue, Random } from "effect"
import * as ShardFencing from "./ShardFencing.js"
import { WebhookDeliveryBatches } from "./WebhookDeliveryBatches.js"
import { WebhookEndpointEntity } from "./WebhookEndpointProtocol.js"
import * as WebhookMetrics from "./WebhookMetrics.js"

/** Longest wait for the target's addresses at an attempt (a timeout is a `network_error`). */
const RESOLVE_TIMEOUT_MS = 5_000

export const WebhookEndpointEntityLive = WebhookEndpointEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const endpointId = address.entityId
    // an attempt is a decision: taken only while this runner holds the endpoint's shard (`ShardLease`)
    const lease = Option.getOrUndefined(yield* ShardFencing.currentLease)
    const transactions = yield* Transactions.Transactions
    const endpoints = yield* WebhookEndpointsRepo.WebhookEndpointsRepo
    const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
    const batches = yield* WebhookDeliveryBatches
    const config = yield* WebhooksConfig.WebhooksConfig
    const keyring = config.keyring
    const wake = yield* Queue.sliding<void>(1)
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)
    // connections to the endpoint's checked address, reused across attempts, closed with the entity
    const agents = yield* Effect.acquireRelease(
      Effect.sync(() => new SafeEgress.PinnedAgents()),
      (a) => Effect.promise(() => a.close())
    )

    const secretsOf = (row: WebhookDeliveriesRepo.ClaimedDelivery["endpoint"], nowMs: number) => {
      const secrets = [keyring.open(row.secret_sealed)]
      if (
        row.previous_secret_sealed && row.previous_secret_expires_at &&
        Date.parse(row.previous_secret_expires_at) > nowMs
      ) {
        secrets.push(keyring.open(row.previous_secret_sealed))
      }
      return secrets
    }

    /** One attempt of a delivery the pull took (`claimDue`: counted, with its endpoint as it was then). */
    const attempt = (delivery: WebhookDeliveriesRepo.ClaimedDelivery) =>
      Effect.gen(function*() {
        const attemptNo = delivery.attempt_count
        const body = delivery.envelope
        const endpoint = delivery.endpoint
        let outcome: SafeEgress.AttemptOutcome
        if (endpoint.deleted || endpoint.status === "disabled") {
          outcome = { reason: "not_deliverable", retryable: false, status: null, latencyMs: null }
        } else {
          // a resolver that never answers must not hold the attempt: resolution (<= 5 s) plus the
          // request (<= 10 s) stay under the sweeper's stuck limit (20 s), so a slow attempt is
          // not handed out a second time while it is still running
          // (a plain timer around the lookup alone, not a fiber race per attempt)
          const target = yield* Effect.promise(() =>
            UrlPolicy.resolveTarget(endpoint.url, config.allowPrivateTargets, config.resolver, RESOLVE_TIMEOUT_MS)
          )
          if (target === "unresolvable_host") {
            // a DNS failure is a network error (retried), not a refused target
            outcome = { reason: "network_error", retryable: true, status: null, latencyMs: null }
          } else if (typeof target === "string") {
            outcome = { reason: "blocked_target", retryable: false, status: null, latencyMs: null }
          } else {
            const nowMs = yield* Clock.currentTimeMillis
            const timestamp = Math.floor(nowMs / 1000)
            const headers = {
              "x-webhook-event-id": delivery.event_id,
              "x-webhook-delivery-id": delivery.id,
              "x-webhook-event": delivery.event_type,
              "x-webhook-timestamp": String(timestamp),
              "x-webhook-attempt": String(attemptNo),
              "x-webhook-signature": WebhookSigner.signatureHeader(secretsOf(endpoint, nowMs), timestamp, body)
            }
            yield* WebhookMetrics.recordLatency(attemptNo, (nowMs - delivery.created_at) / 1000)
            outcome = yield* Effect.promise(() => SafeEgress.post(target, headers, body, agents.for(target)))
          }
        }
        yield* Effect.annotateCurrentSpan({
          "webhook.outcome": outcome.reason,
          ...(outcome.status === null ? {} : { "http.response.status_code": outcome.status })
        })
        yield* record(delivery.id, attemptNo, outcome)
      }).pipe(
        // a trace of its own per attempt (tracing on): never the URL, which may carry a token
        Effect.withSpan("WebhookEndpoint.deliver", {
          root: true,
          captureStackTrace: false,
          attributes: {
            "webhook.endpoint.id": endpointId,
            "webhook.delivery.id": delivery.id,
            "webhook.event.type": delivery.event_type,
            "webhook.attempt": delivery.attempt_count
          }
        })
      )

    const record = (deliveryId: string, attemptNo: number, outcome: SafeEgress.AttemptOutcome) =>
      Effect.gen(function*() {
        const nowMs = yield* Clock.currentTimeMillis
        const reason: Webhooks.FailureReason = outcome.reason
        if (reason === "ok" && outcome.status !== null) {
          // the common case in one statement: delivery, attempt and the counter's reset
          // with the other successes of the runner that are ready now: one statement for all
          yield* batches.recordSuccess({
            id: deliveryId,
            endpointId,
            attempt: attemptNo,
            at: Schemas.toTimestamp(nowMs),
            responseStatus: outcome.status,
            latencyMs: outcome.latencyMs
          })
          yield* WebhookMetrics.recordAttempt("succeeded", reason)
          return
        }
        // the decision is the domain's (`nextDeliveryState`); this records it
        const decided = Webhooks.nextDeliveryState(reason, attemptNo, nowMs, yield* Random.next, config.retryDelayScale)
        const next = {
          status: decided.status,
          nextAttemptAt: decided.nextAttemptAt === null ? null : Schemas.toTimestamp(decided.nextAttemptAt)
        }
        yield* transactions.run(Effect.gen(function*() {
          const recorded = yield* deliveries.record({
            id: deliveryId,
            attempt: attemptNo,
            at: Schemas.toTimestamp(nowMs),
            responseStatus: outcome.status,
            reason,
            latencyMs: outcome.latencyMs,
            next
          })
          // a late result of an attempt that was handed out again is not counted twice; a success
          // (an answer always has its status) resets the counter in `recordSuccess` above
          if (recorded && reason !== "not_deliverable" && reason !== "ok") {
            // counted one after the other on the locked row; the rule is the domain's
            const counter = yield* endpoints.lockFailureCounter(endpointId)
            const after = Option.isSome(counter) ? Webhooks.afterFailedAttempt(counter.value) : undefined
            if (after !== undefined) {
              yield* endpoints.setFailureCounter(endpointId, after, Schemas.toTimestamp(nowMs))
            }
            // a disabled endpoint is not counted (`after` undefined): "disabled" is this failure's doing
            if (after?.status === "disabled") {
              yield* Metric.increment(WebhookMetrics.endpointsDisabled)
              yield* Effect.logWarning("webhook endpoint disabled after consecutive failures").pipe(
                Effect.annotateLogs("endpoint_id", endpointId)
              )
            }
          }
        }))
        yield* WebhookMetrics.recordAttempt(
          next.status === "pending" ? "retrying" : next.status === "succeeded" ? "succeeded" : next.status,
          reason
        )
      })

    // Deliveries whose attempt runs now. Each attempt runs on its own fiber (interrupted with the
    // entity) and frees its slot when done, so one slow answer holds one slot, not the batch.
    const inFlight = new Set<string>()
    const scope = yield* Effect.scope
    const release = (id: string) =>
      Effect.suspend(() => {
        inFlight.delete(id)
        return Queue.offer(wake, undefined)
      })

    /**
     * One pull: fills the free slots with due deliveries, oldest first (taken for their attempt in
     * the same statement); otherwise waits for a wake-up or a freed slot (at most 1 s).
     */
    const step = Effect.gen(function*() {
      const free = config.maxInFlight - inFlight.size
      // (with the other endpoints' pulls of this moment: one statement for all)
      const due = free <= 0 ? [] : yield* batches.claimDue({ endpointId, now: yield* now, limit: free, lease })
      if (due.length === 0) {
        yield* Queue.take(wake).pipe(Effect.timeout("1 second"), Effect.ignore)
        return
      }
      for (const d of due) {
        inFlight.add(d.id)
        yield* attempt(d).pipe(
          Effect.catchAllCause((cause) => Effect.logError("webhook attempt failed", cause)),
          Effect.ensuring(release(d.id)),
          Effect.forkIn(scope)
        )
      }
    })
    // A failed step (database unreachable, ...) must not end the loop: the sweeper's wake-ups
    // keep this entity from passivating, so a stopped loop would never deliver again.
    yield* step.pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("webhook delivery step failed; retrying in 1 s", cause).pipe(
          Effect.zipRight(Effect.sleep("1 second"))
        )
      ),
      Effect.forever,
      Effect.annotateLogs("endpoint_id", endpointId),
      Effect.forkScoped
    )

    return WebhookEndpointEntity.of({
      Wake: () => Rpc.fork(Queue.offer(wake, undefined).pipe(Effect.asVoid))
    })
  }),
  { maxIdleTime: "30 seconds" }
).pipe(Layer.provide(Layer.mergeAll(Transactions.Transactions.Default, WebhookDeliveryBatches.Default)))
