/** API keys. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Characters, Errors, Identity, Ids, Pagination, Schemas, Scopes } from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, requireScopes, sessionOnly } from "./Security.js"

export const CreateApiKeyRequest = Schemas.StrictStruct({
  name: Schema.String.pipe(Characters.minCharacters(1), Characters.maxCharacters(100)),
  mode: Identity.KeyMode,
  scopes: Schema.optional(Schema.Array(Scopes.Scope)).annotations({
    description: "Omitted or empty: every scope except `webhooks.manage`, which must be requested explicitly."
  }),
  expires_at: Schema.optional(Schema.NullOr(Schemas.Timestamp.pipe(
    Schema.filter((s) => !Number.isNaN(Date.parse(s)) || "Expected an ISO 8601 timestamp")
  )))
}).annotations({ identifier: "CreateApiKeyRequest" })

export class ApiKeysApi extends HttpApiGroup.make("apiKeys")
  .add(
    HttpApiEndpoint.get("list", "/v1/api-keys")
      .setUrlParams(Schema.Struct(Pagination.ListParams))
      .addSuccess(Pagination.Page(Identity.ApiKey))
      .annotate(
        OpenApi.Description,
        "Keys of the workspace, revoked ones included, newest first. Secrets are never shown."
      )
      .pipe(requireScopes("workspace.read"))
  )
  .add(
    HttpApiEndpoint.post("create", "/v1/api-keys")
      .setPayload(CreateApiKeyRequest)
      .addSuccess(Identity.CreatedApiKey, { status: 201 })
      .addError(Errors.EntitlementLimitReached)
      .annotate(
        OpenApi.Description,
        "Creates a key. The `secret` is in this response only. User session only. The `api_keys` entitlement is " +
          "not enforced yet (`GET /v1/plan` shows `enforced: false`; `GET /v1/usage` reports the count): keys are " +
          "never refused for their number today, so the declared 409 `ENTITLEMENT_LIMIT_REACHED` is not answered " +
          "until a release enforces it."
      )
      .pipe(sessionOnly)
  )
  .add(
    HttpApiEndpoint.del("revoke", "/v1/api-keys/:keyId")
      .setPath(Schema.Struct({ keyId: Ids.IdRef("key") }))
      .addSuccess(Schema.Struct({ id: Ids.Id("key"), revoked_at: Schemas.Timestamp }))
      .addError(Errors.ApiKeyNotFound)
      .annotate(
        OpenApi.Description,
        "Revokes at once on every node. Repeating it returns the original `revoked_at`. Least privilege: a signed-in user may revoke any key of the workspace; an API key only keys of its own mode whose scopes it holds all of (itself included), else 403 `FORBIDDEN` with `details.reason` `key_mode_mismatch` or `key_scopes_exceed_own` and `details.missing_scopes`."
      )
      .pipe(requireScopes("workspace.read"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "API keys")
{}
