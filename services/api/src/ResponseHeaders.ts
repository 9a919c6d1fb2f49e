/** Response headers and status from typed handlers (they also apply to error responses). */
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

export const setHeader = (name: string, value: string) =>
  HttpApp.appendPreResponseHandler((_req, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, name, value))
  )
