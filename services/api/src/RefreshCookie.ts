/**
 * The refresh-token cookie: set on login and refresh (`handlers/AuthHandlers.ts`), expired on
 * logout (`handlers/SessionHandlers.ts`). HttpOnly, Secure, SameSite=Strict and scoped to
 * `/v1/auth`, so only the auth routes ever receive it (the console signs in again through it,
 * docs/CONSOLE.md).
 */
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Duration, Effect } from "effect"

/** The cookie's name */
export const COOKIE = "refresh_token"

/** How long the cookie lives: as long as a refresh token (30 days) */
export const REFRESH_MAX_AGE = 30 * 24 * 3600

const cookieOptions = (basePath: string) => ({
  httpOnly: true,
  secure: true,
  sameSite: "strict" as const,
  path: `${basePath}/v1/auth`
})

/** Sets the cookie on the response about to be sent. */
export const setRefreshCookie = (basePath: string, token: string, maxAgeSeconds: number = REFRESH_MAX_AGE) =>
  HttpApp.appendPreResponseHandler((_req, response) =>
    Effect.orDie(HttpServerResponse.setCookie(response, COOKIE, token, {
      ...cookieOptions(basePath),
      maxAge: Duration.seconds(maxAgeSeconds)
    }))
  )

/** Expires the cookie on the response about to be sent. */
export const expireRefreshCookie = (basePath: string) =>
  HttpApp.appendPreResponseHandler((_req, response) =>
    Effect.orDie(HttpServerResponse.expireCookie(response, COOKIE, cookieOptions(basePath)))
  )
