/** Per-IP limits of the public auth routes (login 20 per 15 minutes per IP). */
import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { AuthApi } from "@switchboard/api"
import { Effect, Layer, Option } from "effect"
import { routeTable } from "./RouteTable.js"
import { RateLimits } from "./services/RateLimits.js"

export const IpRateLimitLive = Layer.effect(
  AuthApi.IpRateLimit,
  Effect.gen(function*() {
    const rateLimits = yield* RateLimits
    return Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const route = yield* HttpRouter.RouteContext
      const rule = routeTable.requirements.get(`${route.route.method} ${route.route.path}`)?.rateLimit
      if (!rule) return
      const ip = Option.getOrElse(request.remoteAddress, () => "unknown")
      yield* rateLimits.enforce(rule, ip)
    })
  })
)
