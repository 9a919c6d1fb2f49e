/** Users, workspaces, sessions and API keys as they appear on the wire. */
import { Schema } from "effect"
import { Id } from "./Ids.js"
import { PlanName } from "./Plans.js"
import { Timestamp } from "./Schemas.js"
import { Scope } from "./Scopes.js"

export const Role = Schema.Literal("owner", "admin", "member")

export class User extends Schema.Class<User>("User")({
  id: Id("usr"),
  object: Schema.Literal("user"),
  email: Schema.String,
  name: Schema.String,
  email_verified_at: Schema.NullOr(Timestamp),
  status: Schema.Literal("active", "suspended"),
  created_at: Timestamp
}) {}

export class WorkspaceMembership extends Schema.Class<WorkspaceMembership>("WorkspaceMembership")({
  id: Id("ws"),
  name: Schema.String,
  role: Role,
  plan: PlanName,
  status: Schema.Literal("active", "suspended")
}) {}

export class Workspace extends Schema.Class<Workspace>("Workspace")({
  id: Id("ws"),
  object: Schema.Literal("workspace"),
  name: Schema.String,
  plan: PlanName,
  status: Schema.Literal("active", "suspended"),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const KeyMode = Schema.Literal("test", "live")
export type KeyMode = typeof KeyMode.Type

export class ApiKey extends Schema.Class<ApiKey>("ApiKey")({
  id: Id("key"),
  object: Schema.Literal("api_key"),
  name: Schema.String,
  mode: KeyMode,
  prefix: Schema.Literal("wa_test", "wa_live"),
  last4: Schema.String,
  scopes: Schema.Array(Scope),
  expires_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp)
}) {}

export class CreatedApiKey extends Schema.Class<CreatedApiKey>("CreatedApiKey")({
  ...ApiKey.fields,
  secret: Schema.String.annotations({ description: "The full key. Shown once, never again." })
}) {}
