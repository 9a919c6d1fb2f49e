/**
 * kill -9 of the runner hosting the singletons (the webhook sweeper with its Postgres `LISTEN`,
 * found through its connection) while messages and webhook deliveries flow, with two runners:
 * the singleton starts on the survivor, deliveries resume there, no message or event is lost;
 * duplicates only as at-least-once delivery allows, and counted. Real mode only.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { settle, startChaosStack, startLoad, tally, webhookListenerHost } from "./support/Chaos.js"
import type { ChaosStack } from "./support/Chaos.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const url = testDatabaseUrl()

describe.skipIf(url === undefined)("kill -9 of the runner hosting the singletons", () => {
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let stack: ChaosStack | undefined

  afterAll(async () => {
    await stack?.stop()
    await database?.drop()
  }, 90_000)

  it("moves the singletons to the other runner and delivers every event", async () => {
    database = await e2eDatabase(url!, "chaos_singletons")
    stack = await startChaosStack({ databaseUrl: database.url, runners: 2, apis: 1, channels: 6 })
    const load = startLoad(stack, { perSecond: 8 })
    await sleep(4_000)
    const host = await webhookListenerHost(stack)
    assert.isDefined(host, "a runner listens for new webhook deliveries")
    host!.child.kill("SIGKILL")
    const killed = Date.now()
    let moved: number | undefined
    while (moved === undefined && Date.now() - killed < 60_000) {
      const next = await webhookListenerHost(stack)
      if (next !== undefined && next !== host) moved = Date.now() - killed
      else await sleep(250)
    }
    console.log(`[chaos singletons] the webhook listener started on the survivor ${moved} ms after the kill`)
    assert.isDefined(moved, "the singleton moved to the surviving runner")
    await sleep(4_000)
    await load.stop()
    assert.deepStrictEqual(tally(load.results), { "201": load.results.length })
    const accounting = await settle(stack, load.results.flatMap((r) => (r.id ? [r.id] : [])))
    console.log(`[chaos singletons] ${JSON.stringify(accounting)}`)
    assert.strictEqual(accounting.notRead, 0, "every accepted message was read")
    assert.strictEqual(accounting.sentTwice, 0)
    assert.strictEqual(accounting.eventsMissing, 0, "every event was delivered")
  }, 300_000)
})
