/**
 * The HTTP rate limits (docs/CONFIGURATION.md "Configuration") on `@effect/experimental`'s RateLimiter (Redis store with
 * atomic Lua in real mode, memory store embedded). `RATE_LIMITS=on|off` (default on when
 * `NODE_ENV=production`); each rule is tunable with `RATE_LIMIT_<RULE>=<limit>/<window>`, e.g.
 * `RATE_LIMIT_LOGIN=20/15 minutes`. When the store is unreachable the limiter fails open: requests
 * are served unchecked, with one warning when the outage begins, one every
 * `OUTAGE_REMINDER` while it lasts, and one line when the store answers again, each with the
 * number of requests allowed unchecked (docs/LIMITS.md "Rate limits").
 */
import { RateLimiter } from "@effect/experimental"
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Errors } from "@switchboard/domain"
import { Clock, Config, Duration, Effect, Metric, Option, Ref } from "effect"
import * as SendMetrics from "../SendMetrics.js"

export interface RateLimitRuleSpec {
  readonly limit: number
  readonly window: Duration.Duration
  readonly scope: "workspace" | "ip"
}

const rule = (limit: number, window: Duration.DurationInput, scope: "workspace" | "ip"): RateLimitRuleSpec => ({
  limit,
  window: Duration.decode(window),
  scope
})

/** The rules, by name (endpoints name their rule with `rateLimited(...)`). */
export const DEFAULT_RULES: Record<string, RateLimitRuleSpec> = {
  send: rule(600, "1 minute", "workspace"),
  channel_create: rule(20, "1 minute", "workspace"),
  sandbox_session_create: rule(10, "1 hour", "workspace"),
  sandbox_verify: rule(20, "10 minutes", "workspace"),
  contact_create: rule(600, "1 minute", "workspace"),
  contact_import: rule(20, "1 minute", "workspace"),
  template_test_send: rule(60, "1 minute", "workspace"),
  conversation_reply: rule(600, "1 minute", "workspace"),
  /** `POST /v1/media`: each upload moves up to 100 MiB into the database, so fewer than sends */
  media_upload: rule(120, "1 minute", "workspace"),
  qr_start: rule(30, "1 minute", "workspace"),
  login: rule(20, "15 minutes", "ip"),
  /**
   * Its own counter: a refresh token is a 256-bit secret (nothing to guess), and a console that
   * refreshes every 15 minutes must not be locked out by failed logins from its network.
   */
  refresh: rule(120, "15 minutes", "ip"),
  register: rule(20, "15 minutes", "ip")
}

const parseRule = (raw: string, scope: "workspace" | "ip"): Option.Option<RateLimitRuleSpec> => {
  const match = /^\s*(\d+)\s*\/\s*(.+)$/.exec(raw)
  if (!match) return Option.none()
  return Option.map(Duration.decodeUnknown(match[2]!.trim()), (window) => ({ limit: Number(match[1]), window, scope }))
}

/**
 * The limiter's Redis store counts a window in `limit` slices of `window / limit` ms, and Redis
 * takes whole milliseconds only: a rule whose window is not a whole number of ms per request
 * (`7/15 minutes`; more requests than milliseconds) failed every command and so was never
 * enforced (failing open, one warning per request). The window is rounded up to the next whole
 * number of ms per request (`7/15 minutes` becomes 900 004 ms; `100000/1 minute`, 100 s).
 */
export const wholeMillisecondSlices = (spec: RateLimitRuleSpec): RateLimitRuleSpec => {
  const ms = Duration.toMillis(spec.window)
  const slice = Math.max(1, Math.ceil(ms / spec.limit))
  return slice * spec.limit === ms ? spec : { ...spec, window: Duration.millis(slice * spec.limit) }
}

export const config = Effect.gen(function*() {
  const env = yield* Config.string("NODE_ENV").pipe(Config.withDefault("development"))
  const enabled = yield* Config.literal("on", "off")("RATE_LIMITS").pipe(
    Config.withDefault(env === "production" ? "on" : "off"),
    Config.map((v) => v === "on")
  )
  const rules: Record<string, RateLimitRuleSpec> = {}
  for (const [name, spec] of Object.entries(DEFAULT_RULES)) {
    const raw = yield* Config.option(Config.string(`RATE_LIMIT_${name.toUpperCase()}`))
    rules[name] = wholeMillisecondSlices(Option.match(Option.flatMap(raw, (r) => parseRule(r, spec.scope)), {
      onNone: () => spec,
      onSome: (s) => s
    }))
  }
  return { enabled, rules }
})

const setHeaders = (headers: Record<string, string>) =>
  HttpApp.appendPreResponseHandler((_req, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))

const seconds = (d: Duration.Duration) => String(Math.max(1, Math.ceil(Duration.toSeconds(d))))

/** While the store stays unreachable, a reminder this often (the first failure logs at once). */
export const OUTAGE_REMINDER = Duration.seconds(30)

interface Outage {
  /** when the current outage's last line was logged; `undefined`: the store answers */
  readonly loggedAt: number | undefined
  /** requests allowed unchecked since that line */
  readonly unchecked: number
  /** and since the outage began */
  readonly total: number
}

/**
 * The log of a store outage: loud enough to notice, never a line per request (a busy node would
 * log thousands a second). Returns the effect that records one request's outcome.
 */
const outageLog = Effect.gen(function*() {
  const state = yield* Ref.make<Outage>({ loggedAt: undefined, unchecked: 0, total: 0 })
  const failed = (rule: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const due = yield* Ref.modify(state, (s): [Outage | undefined, Outage] => {
        const total = s.total + 1
        if (s.loggedAt === undefined) {
          return [{ loggedAt: now, unchecked: 1, total }, { loggedAt: now, unchecked: 0, total }]
        }
        if (now - s.loggedAt >= Duration.toMillis(OUTAGE_REMINDER)) {
          return [{ ...s, unchecked: s.unchecked + 1, total }, { loggedAt: now, unchecked: 0, total }]
        }
        return [undefined, { ...s, unchecked: s.unchecked + 1, total }]
      })
      if (due === undefined) return
      yield* (due.total === 1
        ? Effect.logWarning("rate limiter store unreachable: allowing requests unchecked until it answers")
        : Effect.logWarning("rate limiter store still unreachable: requests allowed unchecked")).pipe(
          Effect.annotateLogs({ rule, allowed_unchecked: due.unchecked, allowed_unchecked_total: due.total })
        )
    })
  const answered = Effect.gen(function*() {
    const ended = yield* Ref.modify(
      state,
      (s): [Outage | undefined, Outage] =>
        s.loggedAt === undefined ? [undefined, s] : [s, { loggedAt: undefined, unchecked: 0, total: 0 }]
    )
    if (ended !== undefined) {
      // a warning too: it reports how many requests went unchecked, and closes the outage's warning
      yield* Effect.logWarning("rate limiter store reachable again: limits enforced").pipe(
        Effect.annotateLogs({ allowed_unchecked_total: ended.total })
      )
    }
  })
  return { failed, answered } as const
})

const limited = Metric.counter("switchboard_rate_limited_total", {
  description: "Requests refused with 429 by a rate-limit rule, by rule",
  incremental: true
})

const unchecked = Metric.counter("switchboard_rate_limit_unchecked_total", {
  description: "Requests allowed unchecked while the rate limiter's store was unreachable, by rule",
  incremental: true
})

export class RateLimits extends Effect.Service<RateLimits>()("@switchboard/service-api/RateLimits", {
  effect: Effect.gen(function*() {
    const limiter = yield* RateLimiter.RateLimiter
    const { enabled, rules } = yield* config
    const outage = yield* outageLog

    /**
     * Counts one request against `ruleName` for `subject` (a workspace id or an IP); sets the
     * `RateLimit-*` headers; fails with 429 and `Retry-After` once the limit is reached.
     */
    const enforce = Effect.fn("RateLimits.enforce")(function*(ruleName: string, subject: string) {
      const spec = rules[ruleName]
      if (!enabled || spec === undefined) return
      const result = yield* limiter.consume({
        algorithm: "fixed-window",
        onExceeded: "fail",
        window: spec.window,
        limit: spec.limit,
        key: `${ruleName}:${subject}`
      }).pipe(Effect.either)
      if (result._tag === "Right") {
        yield* outage.answered
        yield* setHeaders({
          "ratelimit-limit": String(spec.limit),
          "ratelimit-remaining": String(Math.max(0, result.right.remaining)),
          "ratelimit-reset": seconds(result.right.resetAfter)
        })
        return
      }
      const error = result.left
      if (error.reason === "StoreError") {
        yield* Metric.increment(Metric.tagged(unchecked, "rule", ruleName))
        return yield* outage.failed(ruleName)
      }
      yield* Metric.increment(Metric.tagged(limited, "rule", ruleName))
      if (SendMetrics.SEND_RULES.has(ruleName)) {
        yield* SendMetrics.recordRefusedReason(Errors.RateLimited.code.toLowerCase())
      }
      yield* outage.answered
      const retryAfter = seconds(error.retryAfter)
      yield* setHeaders({
        "ratelimit-limit": String(spec.limit),
        "ratelimit-remaining": "0",
        "ratelimit-reset": retryAfter,
        "retry-after": retryAfter
      })
      return yield* new Errors.RateLimited({
        message: `Rate limit of ${spec.limit} per ${Duration.format(spec.window)} reached; retry in ${retryAfter} s`,
        details: { rule: ruleName, limit: spec.limit, retry_after_seconds: Number(retryAfter) }
      })
    })

    return { enforce, enabled } as const
  })
}) {}
