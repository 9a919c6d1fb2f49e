/** API key scopes and the default set. */
import { Schema } from "effect"

export const SCOPES = [
  "workspace.read",
  "channels.read",
  "channels.manage",
  "messages.read",
  "messages.send",
  "contacts.read",
  "contacts.manage",
  "templates.manage",
  "campaigns.read",
  "campaigns.manage",
  "automations.manage",
  "webhooks.manage"
] as const

/**
 * Scopes no route requires yet: campaigns and automations are not built. Keys get them by default
 * so a key made today keeps working when those routes arrive (docs/API.md).
 */
export const RESERVED_SCOPES: ReadonlyArray<Scope> = ["campaigns.read", "campaigns.manage", "automations.manage"]

export const Scope = Schema.Literal(...SCOPES).annotations({
  identifier: "Scope",
  description:
    "`campaigns.read`, `campaigns.manage` and `automations.manage` are reserved: no route requires them yet (campaigns and automations are not built)."
})
export type Scope = typeof Scope.Type

/** Every scope except `webhooks.manage`, which must be requested explicitly. */
export const DEFAULT_SCOPES: ReadonlyArray<Scope> = SCOPES.filter((s) => s !== "webhooks.manage")
