import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Api, CurrentPrincipal, RefreshRequest } from "@switchboard/api"
import { Unauthorized } from "@switchboard/domain"
import { Duration, Effect } from "effect"
import { HttpConfig } from "../HttpConfig.js"
import { optionalJsonBody } from "../HttpMiddlewares.js"
import { Accounts } from "../services/Accounts.js"

const COOKIE = "refresh_token"

const cookieOptions = (basePath: string) => ({
  httpOnly: true,
  secure: true,
  sameSite: "strict" as const,
  path: `${basePath}/v1/auth`
})

const setRefreshCookie = (basePath: string, token: string, maxAgeSeconds: number) =>
  HttpApp.appendPreResponseHandler((_req, response) =>
    Effect.orDie(HttpServerResponse.setCookie(response, COOKIE, token, {
      ...cookieOptions(basePath),
      maxAge: Duration.seconds(maxAgeSeconds)
    }))
  )

export const AuthHandlers = HttpApiBuilder.group(Api, "auth", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const { basePath } = yield* HttpConfig
    const REFRESH_MAX_AGE = 30 * 24 * 3600
    return handlers
      .handle("register", ({ payload }) => accounts.register(payload))
      .handle("verifyEmail", ({ payload }) => accounts.verifyEmail(payload.token))
      .handle("login", ({ payload }) =>
        Effect.tap(accounts.login(payload), (session) =>
          setRefreshCookie(basePath, session.refresh_token, REFRESH_MAX_AGE)))
      .handle("refresh", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const body = yield* optionalJsonBody(RefreshRequest)
          const token = body?.refresh_token ?? request.cookies[COOKIE]
          if (!token) {
            return yield* new Unauthorized({ message: "No refresh token in the body or the cookie" })
          }
          const session = yield* accounts.refresh(token)
          yield* setRefreshCookie(basePath, session.refresh_token, REFRESH_MAX_AGE)
          return session
        }))
  }))

export const SessionHandlers = HttpApiBuilder.group(Api, "session", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const { basePath } = yield* HttpConfig
    return handlers
      .handle("logout", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          yield* accounts.logout(principal.sessionId!)
          yield* HttpApp.appendPreResponseHandler((_req, response) =>
            Effect.orDie(HttpServerResponse.expireCookie(response, COOKIE, cookieOptions(basePath)))
          )
        }))
      .handle("me", () => Effect.flatMap(CurrentPrincipal, (principal) => accounts.me(principal.userId!)))
      .handle("members", ({ urlParams }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          accounts.members(principal.workspaceId, urlParams)))
  }))
