/**
 * kill -9 of one of two api nodes mid-request under load. The client retries every request that
 * got no answer (or a 503, or a 409 `in_progress`) with the same `Idempotency-Key` on the other
 * node: every key ends with exactly one message (the same id in every 201 for it), nothing is
 * half-written, and every message is delivered. A key whose request died with the node stays
 * `in_progress` (409) until its claim's lease ends (10 s without renewal; it was a fixed 60 s):
 * the retries get their answer within that. Real mode only.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { settle, startChaosStack, startLoad, tally } from "./support/Chaos.js"
import type { ChaosStack } from "./support/Chaos.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const url = testDatabaseUrl()

describe.skipIf(url === undefined)("kill -9 of an api node under load", () => {
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let stack: ChaosStack | undefined

  afterAll(async () => {
    await stack?.stop()
    await database?.drop()
  }, 90_000)

  it("gives exactly one message per Idempotency-Key to a client that retries on the other node", async () => {
    database = await e2eDatabase(url!, "chaos_api")
    stack = await startChaosStack({ databaseUrl: database.url, apis: 2, channels: 4 })
    const load = startLoad(stack, { perSecond: 16, retry: true })
    await sleep(3_000)
    stack.apis[0]!.child.kill("SIGKILL")
    await sleep(4_000)
    await stack.startApi()
    await sleep(3_000)
    await load.stop()
    const results = load.results
    const byKey = new Map<string, Array<(typeof results)[number]>>()
    for (const r of results) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r])
    const final = [...byKey.values()].map((attempts) => attempts[attempts.length - 1]!)
    const ids = new Set<string>()
    const idsPerKey = [...byKey.values()].map((attempts) => new Set(attempts.flatMap((a) => (a.id ? [a.id] : []))))
    for (const set of idsPerKey) for (const id of set) ids.add(id)
    const interrupted = results.filter((r) => r.status === 0).length
    console.log(
      `[chaos api] ${byKey.size} keys, ${results.length} attempts, ${interrupted} without an answer; attempts ${
        JSON.stringify(tally(results))
      }`
    )
    const errors = new Map<string, number>()
    for (const r of results) if (r.error) errors.set(r.error, (errors.get(r.error) ?? 0) + 1)
    console.log(`[chaos api] errors ${JSON.stringify([...errors])}`)
    // a key whose first request died with the node is `in_progress` until its lease ends (10 s):
    // measured until the accepted attempt was sent (the key was free then); how long that request
    // then took is the surviving node's latency under the whole suite's load, not the lease (CI on a
    // 2-core machine saw 22-28 s to the answer with two thirds of the retried keys never `in_progress`)
    const waited = [...byKey.values()].filter((a) => a.length > 1).map((a) => a[a.length - 1]!.at - a[0]!.at)
    const answered = [...byKey.values()].filter((a) => a.length > 1).map((a) => {
      const last = a[a.length - 1]!
      return last.at + last.ms - a[0]!.at
    })
    console.log(
      `[chaos api] ${waited.length} keys retried; longest until the accepted attempt ${
        Math.max(0, ...waited)
      } ms, until its answer ${Math.max(0, ...answered)} ms; ${
        results.filter((r) => r.reason === "in_progress").length
      } answers 409 in_progress`
    )
    // a 5xx other than 503 is a bug: show what the nodes logged about it
    if (results.some((r) => r.status >= 500 && r.status !== 503)) {
      for (const api of stack.apis) {
        const lines = api.output().split("\n").filter((l) => /ERROR|defect|INTERNAL/i.test(l))
        console.log(`[chaos api] node log:\n${lines.slice(0, 20).join("\n")}`)
      }
    }
    assert.deepStrictEqual(tally(final), { "201": byKey.size }, "every key ended accepted")
    assert.isBelow(Math.max(0, ...waited), 20_000, "a dead request's key is free once its 10 s lease ends")
    assert.deepStrictEqual(idsPerKey.filter((set) => set.size !== 1).length, 0, "one message id per key")
    const accounting = await settle(stack, [...ids])
    console.log(`[chaos api] ${JSON.stringify(accounting)}`)
    assert.strictEqual(accounting.unaccounted, 0, "no message without its key's answer (nothing half-written)")
    assert.strictEqual(accounting.notRead, 0)
    assert.strictEqual(accounting.sentTwice, 0)
    assert.strictEqual(accounting.eventsMissing, 0)
  }, 300_000)
})
