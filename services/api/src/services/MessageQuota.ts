/**
 * The monthly message quota on the send path (`monthly_message_quota`, docs/LIMITS.md "Plans"):
 * a workspace whose plan or override sets a number may have that many outbound messages accepted
 * on its non-sandbox channels per UTC calendar month (the period of `GET /v1/usage`); one more is
 * refused with 409 `ENTITLEMENT_LIMIT_REACHED`. Unlimited workspaces pay nothing for it.
 */
import { MessageQuotaRepo } from "@switchboard/db"
import { type Messaging, type Plans, Schemas } from "@switchboard/domain"
import { Clock, Effect } from "effect"
import { enforcedLimit, refuseBeyond } from "./Entitlements.js"

/** The start of the UTC calendar month of `ms` (the usage period). */
export const periodStart = (ms: number): number => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}

export class MessageQuota extends Effect.Service<MessageQuota>()("@switchboard/service-api/MessageQuota", {
  effect: Effect.gen(function*() {
    const repo = yield* MessageQuotaRepo.MessageQuotaRepo

    /** Whether a send on `channel` counts against `quota` (the workspace's resolved entitlement). */
    const applies = (channel: Messaging.Channel, quota: Plans.Entitlement) =>
      channel.provider !== "sandbox" && enforcedLimit("monthly_message_quota", quota) !== undefined

    /**
     * Refuses one more message when the month's accepted messages reached the quota. Call inside
     * the send transaction, before the message is inserted: the workspace's quota lock (held to
     * commit) makes concurrent sends count one after the other, so exactly `limit` get in.
     */
    const admit = Effect.fn("MessageQuota.admit")(function*(channel: Messaging.Channel, quota: Plans.Entitlement) {
      if (!applies(channel, quota)) return
      yield* repo.lockWorkspace(channel.workspace_id)
      const since = periodStart(yield* Clock.currentTimeMillis)
      const used = yield* repo.acceptedSince(channel.workspace_id, Schemas.toTimestamp(since))
      yield* refuseBeyond("monthly_message_quota", quota, used)
    })

    return { applies, admit } as const
  }),
  dependencies: [MessageQuotaRepo.MessageQuotaRepo.Default]
}) {}
