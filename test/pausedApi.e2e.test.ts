/**
 * A paused api node (`kill -STOP` under load for longer than the client's timeout and than an
 * Idempotency-Key claim's 10 s lease, then `kill -CONT`; docs/OPERATING.md "A paused api node"). The
 * client gives up on the paused node after 5 s and retries with the same key on the other node:
 * every key ends with one 201 and one message, and what the woken node still had in flight ends
 * as that key's answer or as a refusal the client may retry, never as a second message. Real
 * Postgres only.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { startChaosStack } from "./support/Chaos.js"
import type { ChaosStack } from "./support/Chaos.js"
import { pausedApi } from "./support/Faults.js"

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("an api node paused longer than the client's timeout", () => {
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let stack: ChaosStack | undefined

  afterAll(async () => {
    stack?.apis[0]?.child.kill("SIGCONT")
    await stack?.stop()
    await database?.drop()
  }, 60_000)

  it("gives exactly one message per Idempotency-Key to a client that retries on the other node", async () => {
    database = await e2eDatabase(url!, "paused_api")
    stack = await startChaosStack({ databaseUrl: database.url, apis: 2, channels: 4 })
    const result = await pausedApi(stack, { perSecond: 4, pauseS: 12, timeoutMs: 5_000 })
    console.log(`[paused api] ${JSON.stringify(result)}`)
    assert.isAbove(result.attempts["no answer"] ?? 0, 0, "requests to the paused node went unanswered")
    assert.isAbove(result.keys_retried, 0)
    assert.strictEqual(result.keys_not_accepted, 0, "every key ended accepted")
    assert.strictEqual(result.keys_with_two_ids, 0, "one message id per key")
    assert.strictEqual(result.unaccounted, 0, "no message without its key's 201 (the woken node wrote none twice)")
    assert.strictEqual(result.notRead, 0, "every accepted message reached read")
    assert.strictEqual(result.eventsMissing, 0, "every event delivered")
    assert.strictEqual(result.dispatched_twice, 0)
    assert.strictEqual(result.sentTwice, 0)
  }, 240_000)
})
