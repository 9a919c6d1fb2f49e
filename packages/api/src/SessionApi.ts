/** The signed-in user's session: who they are, their workspace and its members. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Identity, Ids, Pagination } from "@switchboard/domain"
import { Schema } from "effect"
import { Me, Session } from "./AuthApi.js"
import { Authentication, requireScopes, sessionOnly, workspaceOptional } from "./Security.js"

export class WorkspaceMember extends Schema.Class<WorkspaceMember>("WorkspaceMember")({
  id: Ids.Id("usr"),
  object: Schema.Literal("workspace_member"),
  name: Schema.String,
  email: Schema.String,
  role: Identity.Role,
  status: Schema.Literal("active", "suspended")
}) {}

export class SessionApi extends HttpApiGroup.make("session")
  .add(
    HttpApiEndpoint.post("logout", "/v1/auth/logout")
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(
        OpenApi.Description,
        "Revokes the session: its access tokens stop working at once on every node; clears the cookie."
      )
      .pipe(sessionOnly, workspaceOptional)
  )
  .add(
    HttpApiEndpoint.get("me", "/v1/auth/me")
      .addSuccess(Me)
      .annotate(OpenApi.Description, "The signed-in user and their workspaces. API keys are refused (403).")
      .pipe(sessionOnly, workspaceOptional)
  )
  .add(
    HttpApiEndpoint.get("members", "/v1/workspace/members")
      .setUrlParams(Schema.Struct(Pagination.KeyListParams))
      .addSuccess(Pagination.Page(WorkspaceMember))
      .annotate(
        OpenApi.Description,
        "The people of the selected workspace (`X-Workspace-Id`), in the order of their user ids (oldest account first), paged with `limit` and `after` like every list: who a conversation can be assigned to (`PATCH /v1/conversations/{id}`, `assignee_id`). A signed-in user only: their e-mail addresses are not an API key's to read (403)."
      )
      .pipe(requireScopes("workspace.read"), sessionOnly)
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Session")
{}
