/**
 * The refresh-token cookie: set on login and refresh (`handlers/AuthHandlers.ts`), expired on
 * logout (`handlers/SessionHandlers.ts`). HttpOnly, Secure, SameSite=Strict and scoped to
 * `/v1/auth`, so only the auth routes ever receive it (the console signs in again through it,
 * docs/CONSOLE.md).
 *
 * Beside it, `signed_in=1`: no secret, readable by the console's script and scoped to the console's
 * path, so that a page opened while signed out does not ask `/v1/auth/refresh` (a 401 in every
 * browser's log) for a session it has not got. Set and expired with the refresh cookie.
 */
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Duration, Effect } from "effect"

/** The cookie's name */
export const COOKIE = "refresh_token"

/** The console's hint that a refresh cookie was set (docs/CONSOLE.md "Console"). */
export const HINT_COOKIE = "signed_in"

/** How long the cookie lives: as long as a refresh token (30 days) */
export const REFRESH_MAX_AGE = 30 * 24 * 3600

const cookieOptions = (basePath: string) => ({
  httpOnly: true,
  secure: true,
  sameSite: "strict" as const,
  path: `${basePath}/v1/auth`
})

const hintOptions = (basePath: string) => ({
  httpOnly: false,
  secure: true,
  sameSite: "strict" as const,
  path: `${basePath}/console`
})

/** Sets the cookie (and the console's hint) on the response about to be sent. */
export const setRefreshCookie = (basePath: string, token: string, maxAgeSeconds: number = REFRESH_MAX_AGE) =>
  HttpApp.appendPreResponseHandler((_req, response) =>
    Effect.orDie(
      HttpServerResponse.setCookies(response, [
        [COOKIE, token, { ...cookieOptions(basePath), maxAge: Duration.seconds(maxAgeSeconds) }],
        [HINT_COOKIE, "1", { ...hintOptions(basePath), maxAge: Duration.seconds(maxAgeSeconds) }]
      ])
    )
  )

/** Expires the cookie (and the console's hint) on the response about to be sent. */
export const expireRefreshCookie = (basePath: string) =>
  HttpApp.appendPreResponseHandler((_req, response) =>
    Effect.succeed(
      HttpServerResponse.expireCookie(
        HttpServerResponse.expireCookie(response, COOKIE, cookieOptions(basePath)),
        HINT_COOKIE,
        hintOptions(basePath)
      )
    )
  )
