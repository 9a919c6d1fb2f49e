import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Api, AuthApi } from "@switchboard/api"
import { Errors } from "@switchboard/domain"
import { Effect } from "effect"
import { optionalJsonBody } from "../BodyGuard.js"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { HttpConfig } from "../HttpConfig.js"
import { COOKIE, setRefreshCookie } from "../RefreshCookie.js"
import { Accounts } from "../services/Accounts.js"

export const AuthHandlers = HttpApiBuilder.group(Api.Api, "auth", (handlers) =>
  Effect.gen(function*() {
    const accounts = unavailableAsDefect(yield* Accounts)
    const { basePath } = yield* HttpConfig
    return handlers
      .handle("register", ({ payload }) => accounts.register(payload))
      .handle("verifyEmail", ({ payload }) => accounts.verifyEmail(payload.token))
      .handle("login", ({ payload }) =>
        Effect.tap(accounts.login(payload), (session) =>
          setRefreshCookie(basePath, session.refresh_token)))
      .handle("refresh", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const body = yield* optionalJsonBody(AuthApi.RefreshRequest)
          const token = body?.refresh_token ?? request.cookies[COOKIE]
          if (!token) {
            return yield* new Errors.Unauthorized({ message: "No refresh token in the body or the cookie" })
          }
          const session = yield* accounts.refresh(token)
          yield* setRefreshCookie(basePath, session.refresh_token)
          return session
        }))
  }))
