/** `GET /v1/usage`: the current UTC calendar month (exclusive end) and live gauges. */
import { UsageRepo } from "@switchboard/db"
import { type Plans, Schemas } from "@switchboard/domain"
import { Clock, Effect } from "effect"
import { Entitlements } from "./Entitlements.js"

export class UsageReport extends Effect.Service<UsageReport>()("@switchboard/service-api/UsageReport", {
  effect: Effect.gen(function*() {
    const repo = yield* UsageRepo.UsageRepo
    const entitlements = yield* Entitlements

    const forWorkspace = Effect.fn("UsageReport.forWorkspace")(function*(workspaceId: string) {
      const now = new Date(yield* Clock.currentTimeMillis)
      const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)
      const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)
      const counts = yield* repo.counts(
        workspaceId,
        Schemas.toTimestamp(start),
        Schemas.toTimestamp(end),
        Schemas.toTimestamp(now)
      )
      const { entitlements: values } = yield* entitlements.forWorkspace(workspaceId)
      const gauge = (used: number, name: Plans.EntitlementName) => {
        const value = values[name].value
        const limit = typeof value === "number" ? value : null
        return { used, limit, unlimited: limit === null, remaining: limit === null ? null : Math.max(0, limit - used) }
      }
      return {
        period: { start: Schemas.toTimestamp(start), end: Schemas.toTimestamp(end) },
        metered: {
          messages_sent: gauge(counts.messages_sent, "monthly_message_quota"),
          sandbox_messages: gauge(counts.sandbox_messages, "sandbox_message_quota")
        },
        current: {
          contacts: gauge(counts.contacts, "contacts"),
          connected_channels: gauge(counts.connected_channels, "production_channels"),
          api_keys: gauge(counts.api_keys, "api_keys"),
          seats: gauge(counts.seats, "team_seats"),
          webhook_endpoints: gauge(counts.webhook_endpoints, "webhook_endpoints"),
          // no plan limits stored media: retention (`MEDIA_RETENTION_DAYS`) bounds it
          media_bytes: { used: counts.media_bytes, limit: null, unlimited: true, remaining: null }
        }
      }
    })

    return { forWorkspace } as const
  }),
  dependencies: [UsageRepo.UsageRepo.Default, Entitlements.Default]
}) {}
