/**
 * Plan entitlements with per-workspace overrides. Every feature that
 * creates a limited resource calls `check` with its current count.
 */
import { WorkspacesRepo } from "@switchboard/db"
import { Errors, Plans } from "@switchboard/domain"
import { Effect, Option } from "effect"

/**
 * The limit of an entitlement a use-case counts against, when there is one to enforce: `undefined`
 * for entitlements not enforced yet and for unlimited (or non-numeric) values.
 */
export const enforcedLimit = (name: Plans.EntitlementName, entitlement: Plans.Entitlement): number | undefined =>
  Plans.ENTITLEMENTS[name].enforced && typeof entitlement.value === "number" ? entitlement.value : undefined

/** What one of an entitlement counts, singular and plural ("1 webhook endpoint", "2 contacts"). */
const UNITS: Partial<Record<Plans.EntitlementName, readonly [string, string]>> = {
  monthly_message_quota: ["outbound message a month", "outbound messages a month"],
  production_channels: ["production channel", "production channels"],
  contacts: ["contact", "contacts"],
  webhook_endpoints: ["webhook endpoint", "webhook endpoints"],
  shared_test_sessions: ["shared test session at a time", "shared test sessions at a time"],
  api_keys: ["API key", "API keys"],
  team_seats: ["team seat", "team seats"],
  active_automations: ["active automation", "active automations"]
}

/** `n` of an entitlement in words, plural-aware. */
export const amount = (name: Plans.EntitlementName, n: number): string => {
  const [one, many] = UNITS[name] ?? [name.replace(/_/g, " "), name.replace(/_/g, " ")]
  return `${n} ${n === 1 ? one : many}`
}

/** What a workspace at its limit can do next. */
const NEXT: Partial<Record<Plans.EntitlementName, string>> = {
  monthly_message_quota: "sends are accepted again from the first day of next month (UTC)",
  production_channels: "archive a channel you no longer use (DELETE /v1/channels/{id})",
  contacts: "delete contacts you no longer need (DELETE /v1/contacts/{id})",
  webhook_endpoints: "delete an endpoint you no longer use (DELETE /v1/webhook-endpoints/{id})",
  shared_test_sessions:
    "end a session with DELETE /v1/sandbox/sessions/{id} (or reuse it: GET /v1/sandbox/sessions?status=active)"
}

/** The refusal's sentence: the limit, what to do, and where limits are written down. */
export const limitMessage = (name: Plans.EntitlementName, limit: number): string =>
  `The plan allows ${amount(name, limit)}; ${
    NEXT[name] ?? "ask your operator for a larger plan"
  } (GET /v1/plan shows your limits; docs/LIMITS.md "Plans")`

/**
 * `Entitlements.check` on an entitlement already resolved (the send path reads the plan and its
 * overrides with its checks): refuses when `used + adding` exceeds the enforced limit.
 */
export const refuseBeyond = (
  name: Plans.EntitlementName,
  entitlement: Plans.Entitlement,
  used: number,
  adding = 1
): Effect.Effect<void, Errors.EntitlementLimitReached> => {
  const limit = enforcedLimit(name, entitlement)
  return limit === undefined || used + adding <= limit
    ? Effect.void
    : Effect.fail(
      new Errors.EntitlementLimitReached({
        message: limitMessage(name, limit),
        details: { entitlement: name, limit, used }
      })
    )
}

export class Entitlements extends Effect.Service<Entitlements>()("@switchboard/service-api/Entitlements", {
  effect: Effect.gen(function*() {
    const workspaces = yield* WorkspacesRepo.WorkspacesRepo

    const forWorkspace = Effect.fn("Entitlements.forWorkspace")(function*(workspaceId: string) {
      const workspace = yield* Effect.flatMap(
        workspaces.findById(workspaceId),
        Option.match({
          onNone: () => Effect.dieMessage(`workspace ${workspaceId} vanished`),
          onSome: Effect.succeed
        })
      )
      const overrides = yield* workspaces.overrides(workspaceId)
      return { plan: workspace.plan, entitlements: Plans.resolveEntitlements(workspace.plan, overrides) }
    })

    /** The effective value of one entitlement. */
    const get = Effect.fn("Entitlements.get")(function*(workspaceId: string, name: Plans.EntitlementName) {
      const { entitlements } = yield* forWorkspace(workspaceId)
      return entitlements[name] as Plans.Entitlement
    })

    /**
     * Refuses one more of a limited resource when `used` (the current count, before adding
     * `adding` more) would exceed the limit. Entitlements not enforced yet never refuse.
     */
    const check = Effect.fn("Entitlements.check")(
      function*(workspaceId: string, name: Plans.EntitlementName, used: number, adding = 1) {
        if (!Plans.ENTITLEMENTS[name].enforced) return
        yield* refuseBeyond(name, yield* get(workspaceId, name), used, adding)
      }
    )

    return { forWorkspace, get, check } as const
  }),
  dependencies: [WorkspacesRepo.WorkspacesRepo.Default]
}) {}
