/**
 * Authentication as declared in the contract: the bearer scheme, the principal a request runs
 * as, and the per-endpoint requirements (scopes, session-only, test-key-only, rate limit rule) as
 * endpoint annotations. The server indexes them once (services/api `RouteTable`) and the OpenAPI
 * document shows the same annotations (`accessExtensions`), so the two cannot disagree.
 */
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import type { HttpApiEndpoint } from "@effect/platform"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import { Errors, type Scopes } from "@switchboard/domain"
import { Context, Schema } from "effect"

/**
 * Who is calling, in which workspace. Its ids are typed where the request is authenticated (the
 * key's row, the session's user, the decoded `X-Workspace-Id`), so nothing further in casts them.
 */
export interface Principal {
  readonly kind: "api_key" | "user"
  /** the workspace; `NO_WORKSPACE` on a user's route that takes none (`workspaceOptional`) */
  readonly workspaceId: `ws_${string}`
  readonly scopes: ReadonlyArray<Scopes.Scope>
  /** API key id when `kind = "api_key"` */
  readonly apiKeyId: `key_${string}` | null
  /** `test` or `live` for keys; `null` for users */
  readonly mode: "test" | "live" | null
  /** user id when `kind = "user"` */
  readonly userId: `usr_${string}` | null
  /** session id when `kind = "user"` */
  readonly sessionId: `ses_${string}` | null
}

/** The principal's workspace on a user's route that takes none (`workspaceOptional`): names no workspace. */
export const NO_WORKSPACE = "ws_"

export class CurrentPrincipal extends Context.Tag("@switchboard/api/CurrentPrincipal")<CurrentPrincipal, Principal>() {}

/** Scopes an endpoint needs (all of them). */
export class RequiredScopes extends Context.Reference<RequiredScopes>()("@switchboard/api/RequiredScopes", {
  defaultValue: (): ReadonlyArray<Scopes.Scope> => []
}) {}

/** Endpoints only a signed-in user may call (an API key gets 403). */
export class SessionOnly extends Context.Reference<SessionOnly>()("@switchboard/api/SessionOnly", {
  defaultValue: () => false
}) {}

/**
 * An endpoint with its type parameters spelled out, so that annotating it keeps its exact type
 * (`annotate` returns the same `HttpApiEndpoint<...>`; `HttpApiEndpoint.Any` has no `annotate`).
 */
export type Endpoint<
  Name extends string,
  Method extends HttpMethod,
  Path,
  UrlParams,
  Payload,
  Headers,
  Success,
  Error,
  R,
  RE
> = HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>

export const requireScopes =
  (...scopes: ReadonlyArray<Scopes.Scope>) =>
  <Name extends string, Method extends HttpMethod, Path, UrlParams, Payload, Headers, Success, Error, R, RE>(
    endpoint: Endpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>
  ) => endpoint.annotate(RequiredScopes, scopes)

/** An endpoint flagged `true` under `tag` (OpenAPI: `accessExtensions`). */
const flagged =
  <I>(tag: Context.Tag<I, boolean>) =>
  <Name extends string, Method extends HttpMethod, Path, UrlParams, Payload, Headers, Success, Error, R, RE>(
    endpoint: Endpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>
  ) => endpoint.annotate(tag, true)

export const sessionOnly = flagged(SessionOnly)

/** Endpoints only a test-mode API key (`wa_test_...`) may call: the sandbox's. */
export class TestKeyOnly extends Context.Reference<TestKeyOnly>()("@switchboard/api/TestKeyOnly", {
  defaultValue: () => false
}) {}

export const testKeyOnly = flagged(TestKeyOnly)

/** Session-only endpoints that act on the user, not a workspace: no `X-Workspace-Id` needed. */
export class WorkspaceOptional extends Context.Reference<WorkspaceOptional>()("@switchboard/api/WorkspaceOptional", {
  defaultValue: () => false
}) {}

export const workspaceOptional = flagged(WorkspaceOptional)

/** The HTTP rate limit rule (docs/API.md, column "Rate limit rule") an endpoint counts against, by name. */
export class RateLimitRule extends Context.Reference<RateLimitRule>()("@switchboard/api/RateLimitRule", {
  defaultValue: (): string | null => null
}) {}

export const rateLimited =
  (rule: string) =>
  <Name extends string, Method extends HttpMethod, Path, UrlParams, Payload, Headers, Success, Error, R, RE>(
    endpoint: Endpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>
  ) => endpoint.annotate(RateLimitRule, rule)

/**
 * The OpenAPI extensions of an endpoint's access rules, from its merged annotations (the group's
 * and its own, as the server reads them): `x-required-scopes` (when it needs any),
 * `x-session-only`, `x-test-key-only` (when true) and `x-rate-limit-rule` (when it counts against
 * one). Built here rather than with `OpenApi.Override`, of which an endpoint keeps only the last.
 */
export const accessExtensions = (annotations: Context.Context<never>): Record<string, unknown> => {
  const scopes = Context.get(annotations, RequiredScopes)
  const rule = Context.get(annotations, RateLimitRule)
  return {
    ...(scopes.length > 0 ? { "x-required-scopes": scopes } : {}),
    ...(Context.get(annotations, SessionOnly) ? { "x-session-only": true } : {}),
    ...(Context.get(annotations, TestKeyOnly) ? { "x-test-key-only": true } : {}),
    ...(rule !== null ? { "x-rate-limit-rule": rule } : {})
  }
}

export const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "`Authorization: Bearer <credential>` (scheme case-insensitive): an API key (`wa_test_...`, `wa_live_...`) or a user access token from login. With a user token, `X-Workspace-Id` is required."
  )
)

export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("@switchboard/api/Authentication", {
  failure: Schema.Union(
    Errors.Unauthorized,
    Errors.Forbidden,
    Errors.AccountSuspended,
    Errors.WorkspaceContextRequired,
    Errors.WorkspaceSuspended,
    Errors.ValidationError,
    Errors.RateLimited,
    Errors.ServiceUnavailable
  ),
  provides: CurrentPrincipal,
  security: { bearer }
}) {}
