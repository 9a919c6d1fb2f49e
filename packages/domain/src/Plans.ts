/**
 * Plans and their entitlements. `null` is unlimited. Entitlements marked `enforced: false`
 * are reported but nothing counts against them yet.
 */
import { Schema } from "effect"

export const PLANS = ["free", "starter", "growth", "enterprise"] as const
export const PlanName = Schema.Literal(...PLANS).annotations({ identifier: "PlanName" })
export type PlanName = typeof PlanName.Type

/** An entitlement's value: a number (a limit), a flag, a text, or `null` (unlimited). */
export const EntitlementValue = Schema.Union(Schema.Number, Schema.Boolean, Schema.String, Schema.Null)
export type EntitlementValue = typeof EntitlementValue.Type

interface EntitlementDefinition {
  readonly enforced: boolean
  readonly values: Readonly<Record<PlanName, EntitlementValue>>
}

const def = (
  enforced: boolean,
  free: EntitlementValue,
  starter: EntitlementValue,
  growth: EntitlementValue,
  enterprise: EntitlementValue
): EntitlementDefinition => ({ enforced, values: { free, starter, growth, enterprise } })

export const ENTITLEMENTS = {
  monthly_message_quota: def(true, null, null, null, null),
  production_channels: def(true, 1, 3, 10, null),
  contacts: def(true, 500, 10_000, 100_000, null),
  webhook_endpoints: def(true, 1, 5, 20, null),
  shared_test_sessions: def(true, 1, 1, 1, null),
  sandbox_message_quota: def(false, null, null, null, null),
  verified_sandbox_recipients: def(false, 1, 1, 1, null),
  api_keys: def(false, 2, 10, 25, null),
  team_seats: def(false, 1, 5, 20, null),
  active_automations: def(false, 2, 20, 100, null),
  campaigns_enabled: def(false, false, true, true, true),
  admin_log_retention_days: def(false, 7, 30, 90, null),
  support_tier: def(false, "docs", "standard", "priority", "sla")
} as const satisfies Record<string, EntitlementDefinition>

export type EntitlementName = keyof typeof ENTITLEMENTS
export const ENTITLEMENT_NAMES = Object.keys(ENTITLEMENTS) as ReadonlyArray<EntitlementName>
export const EntitlementNameSchema = Schema.Literal(...ENTITLEMENT_NAMES)

export const Entitlement = Schema.Struct({
  value: Schema.Union(Schema.Number, Schema.Boolean, Schema.String, Schema.Null),
  unlimited: Schema.Boolean,
  source: Schema.Literal("plan", "override"),
  enforced: Schema.Boolean
}).annotations({ identifier: "Entitlement" })
export type Entitlement = typeof Entitlement.Type

/** The effective entitlements of a plan with the workspace's overrides applied. */
export const resolveEntitlements = (
  plan: PlanName,
  overrides: ReadonlyMap<string, EntitlementValue>
): Record<EntitlementName, Entitlement> => {
  const out = {} as Record<EntitlementName, Entitlement>
  for (const name of ENTITLEMENT_NAMES) {
    const definition: EntitlementDefinition = ENTITLEMENTS[name]
    const overridden = overrides.has(name)
    const value = overridden ? overrides.get(name)! : definition.values[plan]
    out[name] = {
      value,
      unlimited: value === null,
      source: overridden ? "override" : "plan",
      enforced: definition.enforced
    }
  }
  return out
}
