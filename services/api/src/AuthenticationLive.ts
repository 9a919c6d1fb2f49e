/**
 * Authentication of every route (docs/API.md): the bearer credential (API key or user access token), the workspace
 * it acts in, session-only routes, scopes, and the route's rate limit. Sessions are read on every
 * request; API keys come from `ApiKeyCache` for a few seconds, invalidated on every node at their
 * revocation, so a revoked key or a logged-out session stops working at once on every node.
 */
import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { Security } from "@switchboard/api"
import { DatabaseUnavailable, SessionsRepo, UsersRepo } from "@switchboard/db"
import { Errors, Ids, Scopes } from "@switchboard/domain"
import { Effect, Layer, Option, Schema } from "effect"
import { routeTable } from "./RouteTable.js"
import { ApiKeys } from "./services/ApiKeys.js"
import { Credentials } from "./services/Credentials.js"
import { RateLimits } from "./services/RateLimits.js"

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i
/** A well-formed workspace id (`X-Workspace-Id`), typed by the check. */
const isWorkspaceId = Schema.is(Ids.Id("ws"))

const unauthorized = (message: string) => new Errors.Unauthorized({ message })

export const AuthenticationLive = Layer.effect(
  Security.Authentication,
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    const credentials = yield* Credentials
    const sessions = yield* SessionsRepo.SessionsRepo
    const users = yield* UsersRepo.UsersRepo
    const rateLimits = yield* RateLimits

    const authenticate = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const route = yield* HttpRouter.RouteContext
      const requirement = routeTable.requirements.get(`${route.route.method} ${route.route.path}`)
      const header = request.headers["authorization"]
      if (header === undefined || header === "") return yield* unauthorized("Missing Authorization header")
      const match = BEARER.exec(header)
      if (!match) return yield* unauthorized("Authorization must use the Bearer scheme")
      const credential = match[1]!

      const workspaceHeader = request.headers["x-workspace-id"]
      if (workspaceHeader !== undefined && !isWorkspaceId(workspaceHeader)) {
        return yield* new Errors.ValidationError({
          message: "Request validation failed",
          details: { issues: [{ path: ["x-workspace-id"], message: "Expected a workspace id (ws_...)" }] }
        })
      }

      let principal: Security.Principal
      if (credential.startsWith("wa_test_") || credential.startsWith("wa_live_")) {
        const key = yield* apiKeys.authenticate(credential)
        if (Option.isNone(key)) return yield* unauthorized("Invalid, revoked or expired credential")
        if (workspaceHeader !== undefined && workspaceHeader !== key.value.workspace_id) {
          return yield* new Errors.Forbidden({ message: "X-Workspace-Id does not match the API key's workspace" })
        }
        if (requirement?.sessionOnly) {
          return yield* new Errors.Forbidden({
            message: "This route needs a signed-in user; API keys are refused",
            details: { reason: "session_required" }
          })
        }
        principal = {
          kind: "api_key",
          workspaceId: key.value.workspace_id,
          scopes: key.value.scopes,
          apiKeyId: key.value.id,
          mode: key.value.mode,
          userId: null,
          sessionId: null
        }
      } else {
        const claims = yield* credentials.verifyAccessToken(credential)
        if (Option.isNone(claims)) return yield* unauthorized("Invalid, revoked or expired credential")
        if (!(yield* sessions.isActive(claims.value.sessionId))) {
          return yield* unauthorized("Invalid, revoked or expired credential")
        }
        const user = yield* users.findById(claims.value.userId)
        if (Option.isNone(user)) return yield* unauthorized("Invalid, revoked or expired credential")
        if (user.value.status === "suspended") {
          return yield* new Errors.AccountSuspended({ message: "This account is suspended" })
        }
        let workspaceId: Security.Principal["workspaceId"] = Security.NO_WORKSPACE
        if (workspaceHeader === undefined) {
          if (!requirement?.workspaceOptional) {
            return yield* new Errors.WorkspaceContextRequired({
              message: "Send X-Workspace-Id with a user access token",
              details: { header: "X-Workspace-Id" }
            })
          }
        } else {
          const membership = yield* users.membership(user.value.id, workspaceHeader)
          if (Option.isNone(membership)) {
            return yield* new Errors.Forbidden({ message: "You are not a member of this workspace" })
          }
          if (membership.value.status !== "active") {
            return yield* new Errors.WorkspaceSuspended({ message: "This workspace is suspended" })
          }
          workspaceId = workspaceHeader
        }
        principal = {
          kind: "user",
          workspaceId,
          scopes: Scopes.SCOPES,
          apiKeyId: null,
          mode: null,
          userId: user.value.id,
          sessionId: claims.value.sessionId
        }
      }

      const missing = (requirement?.scopes ?? []).filter((s) => !principal.scopes.includes(s))
      if (missing.length > 0) {
        return yield* new Errors.Forbidden({
          message: `Missing scope: ${missing.join(", ")}`,
          details: { required_scopes: requirement!.scopes, missing_scopes: missing }
        })
      }
      if (requirement?.rateLimit) yield* rateLimits.enforce(requirement.rateLimit, principal.workspaceId)
      return principal
    })

    return {
      // a passing database failure is a defect here like in the handlers: the error mapping answers 503
      bearer: () => DatabaseUnavailable.dieWhenUnavailable(authenticate)
    }
  })
)
