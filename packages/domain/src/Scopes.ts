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

export const Scope = Schema.Literal(...SCOPES).annotations({ identifier: "Scope" })
export type Scope = typeof Scope.Type

/** Every scope except `webhooks.manage`, which must be requested explicitly. */
export const DEFAULT_SCOPES: ReadonlyArray<Scope> = SCOPES.filter((s) => s !== "webhooks.manage")
