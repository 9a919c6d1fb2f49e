/**
 * The two statements every webhook delivery costs, shared by all the runner's endpoints (group
 * commit, `GroupCommit`): an endpoint's pull (`claimDue`) and a successful attempt's record
 * (`recordSuccess`) wait in a queue, and one statement serves everything queued. Alone, a call
 * is written at once; under load one round trip serves many endpoints and deliveries instead of
 * one each (on this path a statement's socket write and wake-up cost more than its SQL).
 *
 * Nothing else changes: each endpoint's pull still takes at most its free slots, oldest first,
 * skipping rows another transaction holds; each success is recorded only while its delivery is
 * still `delivering` in that attempt, with its own attempt row, and its attempt ends only once
 * the row is committed. A failed statement fails every call in it: a pull is retried by the
 * endpoint's loop, an unrecorded success stays `delivering` and is handed out again (at least
 * once), exactly as when each call had its own statement.
 */
import type { DatabaseUnavailable } from "@switchboard/db"
import { GroupCommit, WebhookDeliveriesRepo } from "@switchboard/db"
import { Effect } from "effect"

export type Success = WebhookDeliveriesRepo.DeliverySuccess

/** At most this many calls per statement (a bound on its parameters and locks). */
const MAX_BATCH = 256

export class WebhookDeliveryBatches
  extends Effect.Service<WebhookDeliveryBatches>()("@switchboard/entities/WebhookDeliveryBatches", {
    scoped: Effect.gen(function*() {
      const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
      const claimDue: (
        request: WebhookDeliveriesRepo.ClaimRequest
      ) => Effect.Effect<
        ReadonlyArray<WebhookDeliveriesRepo.ClaimedDelivery>,
        DatabaseUnavailable.DatabaseUnavailable
      > = yield* GroupCommit
        .make(deliveries.claimDueMany, MAX_BATCH)
      const recordSuccess: (success: Success) => Effect.Effect<boolean, DatabaseUnavailable.DatabaseUnavailable> =
        yield* GroupCommit.make(
          (successes: ReadonlyArray<Success>) =>
            Effect.map(deliveries.recordSuccesses(successes), (recorded) => successes.map((s) => recorded.has(s.id))),
          MAX_BATCH
        )
      return { claimDue, recordSuccess } as const
    })
  })
{}
