/**
 * Redis down and back under a steady load, rate limits on (its own private Redis: the machine's
 * shared one is never touched). Redis holds only the rate-limit counters (and the readiness
 * ping): while it is down every limited request is allowed (fails open), logged once when the
 * outage begins and once when it ends (with the count of requests allowed unchecked), never once
 * per request; nothing else breaks, and once it is back the limits count again (from zero: the
 * counters were lost with it). Real mode only.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { settle, startChaosStack, startLoad, tally } from "./support/Chaos.js"
import type { ChaosStack } from "./support/Chaos.js"
import { startRedis } from "./support/PrivateServers.js"
import type { PrivateRedis } from "./support/PrivateServers.js"
import { call } from "./support/Processes.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const url = testDatabaseUrl()
const LOGIN_LIMIT = 5
const WARNING = "rate limiter store unreachable"

const logins = async (api: string, n: number) => {
  const statuses: Array<number> = []
  for (let i = 0; i < n; i++) {
    const reply = await call(api, "POST", "/v1/auth/login", {
      body: { email: "chaos@example.com", password: "correct horse battery staple" }
    })
    statuses.push(reply.status)
  }
  return statuses
}

describe.skipIf(url === undefined)("Redis down and back under load", () => {
  let redis: PrivateRedis | undefined
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let stack: ChaosStack | undefined

  afterAll(async () => {
    await stack?.stop()
    await redis?.destroy()
    await database?.drop()
  }, 90_000)

  it(
    "fails open while it is down, logging the outage (not each request), and limits again once it is back",
    async () => {
      redis = await startRedis()
      database = await e2eDatabase(url!, "chaos_redis")
      stack = await startChaosStack({
        databaseUrl: database.url,
        redisUrl: redis.url,
        env: {
          LOG_LEVEL: "warn",
          RATE_LIMITS: "on",
          RATE_LIMIT_SEND: "100000/1 minute",
          RATE_LIMIT_LOGIN: `${LOGIN_LIMIT}/1 minute`
        }
      })
      const api = stack.apis[0]!
      const load = startLoad(stack, { perSecond: 8 })
      await sleep(3_000)
      await redis.stop()
      const down = Date.now()
      await sleep(1_000)
      const ready = await call(api.baseUrl, "GET", "/ready")
      // over the limit while Redis is down: every login is allowed
      const duringOutage = await logins(api.baseUrl, LOGIN_LIMIT + 3)
      await sleep(5_000)
      await redis.start()
      const up = Date.now()
      await sleep(8_000)
      await load.stop()
      const summary = tally(load.results)
      console.log(`[chaos redis] sends ${JSON.stringify(summary)}; /ready while down ${ready.status} ${ready.text}`)
      assert.deepStrictEqual(summary, { "201": load.results.length }, "every send accepted, down or not")
      assert.deepStrictEqual(duringOutage, Array(LOGIN_LIMIT + 3).fill(200), "rate limits fail open")
      assert.strictEqual(ready.body.checks.redis.status, "down")
      assert.strictEqual(ready.body.checks.database.status, "up")
      // how loudly: one warning as the outage begins (a reminder every 30 s: this one is shorter),
      // one line when the store answers again, counting what was allowed unchecked
      const lines = api.output().split("\n")
      const warnings = lines.filter((line) => line.includes(WARNING))
      const back = lines.filter((line) => line.includes("rate limiter store reachable again"))
      console.log(`[chaos redis] outage log: ${[...warnings, ...back].join(" / ")}`)
      assert.strictEqual(warnings.length, 1, "one warning, not one per request")
      assert.strictEqual(back.length, 1)
      const unchecked = Number(/allowed_unchecked_total[^0-9]*(\d+)/.exec(back[0]!)?.[1])
      const sentWhileDown = load.results.filter((r) => r.at + r.ms >= down && r.at <= up + 2_000).length
      assert.isAtLeast(unchecked, LOGIN_LIMIT + 3, "the logins allowed over the limit are counted")
      assert.isAtMost(unchecked, sentWhileDown + LOGIN_LIMIT + 3)
      // back: the counters start from zero, and the limit holds again
      const afterwards = await logins(api.baseUrl, LOGIN_LIMIT + 1)
      assert.deepStrictEqual(afterwards, [...Array(LOGIN_LIMIT).fill(200), 429])
      const readyAgain = await call(api.baseUrl, "GET", "/ready")
      assert.strictEqual(readyAgain.status, 200, readyAgain.text)
      const accounting = await settle(stack, load.results.flatMap((r) => (r.id ? [r.id] : [])))
      console.log(`[chaos redis] ${JSON.stringify(accounting)}`)
      assert.strictEqual(accounting.notRead, 0)
      assert.strictEqual(accounting.unaccounted, 0)
      assert.strictEqual(accounting.eventsMissing, 0)
    },
    240_000
  )
})
