/**
 * The send path's cost ladder: what each layer of a `POST /v1/messages` costs the api node, in
 * CPU per request, measured through the real api node (one runner behind it, as in send.ts).
 * Each rung is a real request that stops one layer further down the same path, so the difference
 * between two rungs is the price of the layer between them; no code path exists only for the
 * benchmark.
 *
 *   1 http       GET /health: the HTTP stack and middleware, no authentication, no database
 *   2 decode     POST /v1/messages `{}` with an API key: + authentication, JSON body, the schema
 *                decode that refuses it (422)
 *   3 checks     a valid send to an unverified recipient: + the send checks' statement (422)
 *   4 send       a valid send, no Idempotency-Key: + the transaction (contact, conversation,
 *                message, timeline, event, response) and the wake-up of the channel (201)
 *   5 idempotent the same with an Idempotency-Key (what send.ts loads): + the key's claim (201)
 *
 * Reports, per rung, the api node's CPU per request, the database's transactions per request
 * (pg_stat_database) and the difference to the rung before, medians over `--runs`.
 *
 *   node --import tsx bench/sendLadder.ts [--runs 3] [--duration 10] [--connections 20] [--channels 10]
 */
import autocannon from "autocannon"
import type { Request, Result } from "autocannon"
import { cpuSeconds, formatSummary, machine, numberFlag, record, summarize } from "./lib/Measure.js"
import { RECIPIENT, startStack } from "./lib/Stack.js"

const runs = numberFlag("runs", 3)
const duration = numberFlag("duration", 10)
const connections = numberFlag("connections", 20)
const channelCount = numberFlag("channels", 10)

/** a number no sandbox session verified */
const UNVERIFIED = "+4915199999999"

interface Rung {
  readonly name: string
  readonly expect: number
  readonly request: (apiKey: string, channels: ReadonlyArray<string>, n: number, tag: string) => Request
}

const send = (apiKey: string, body: unknown, extra: Record<string, string> = {}): Request => ({
  method: "POST",
  path: "/v1/messages",
  headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}`, ...extra },
  body: JSON.stringify(body)
})

const RUNGS: ReadonlyArray<Rung> = [
  { name: "http", expect: 200, request: () => ({ method: "GET", path: "/health" }) },
  { name: "decode", expect: 422, request: (key) => send(key, {}) },
  {
    name: "checks",
    expect: 422,
    request: (key, channels, n) =>
      send(key, { to: UNVERIFIED, channel_id: channels[n % channels.length], text: { body: `ladder ${n}` } })
  },
  {
    name: "send",
    expect: 201,
    request: (key, channels, n) =>
      send(key, { to: RECIPIENT, channel_id: channels[n % channels.length], text: { body: `ladder ${n}` } })
  },
  {
    name: "idempotent",
    expect: 201,
    request: (key, channels, n, tag) =>
      send(
        key,
        { to: RECIPIENT, channel_id: channels[n % channels.length], text: { body: `ladder ${n}` } },
        { "idempotency-key": `ladder-${tag}-${n}` }
      )
  }
]

let counter = 0
const load = (baseUrl: string, rung: Rung, apiKey: string, channels: ReadonlyArray<string>, seconds: number) => {
  const tag = `${process.pid}-${Date.now().toString(36)}`
  return autocannon({
    url: baseUrl,
    connections,
    duration: seconds,
    timeout: 30,
    requests: [{ setupRequest: (request) => ({ ...request, ...rung.request(apiKey, channels, counter++, tag) }) }]
  }) as Promise<Result>
}

const main = async () => {
  console.log(`machine: ${JSON.stringify(machine())}`)
  const stack = await startStack({ name: "ladder", runners: 1, sandboxNumbers: channelCount })
  const channels = await stack.sandboxChannels(channelCount)
  const apiPid = stack.api.child.pid!
  const database = new URL(stack.dbUrl).pathname.slice(1)
  const transactions = async () => {
    const { rows } = await stack.db.query<{ n: string }>(
      "SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1",
      [database]
    )
    return Number(rows[0]!.n)
  }
  const samples = new Map<string, { cpu: Array<number>; xacts: Array<number>; rps: Array<number> }>(
    RUNGS.map((r) => [r.name, { cpu: [], xacts: [], rps: [] }])
  )
  try {
    for (const rung of RUNGS) await load(stack.baseUrl, rung, stack.apiKey, channels, 2) // warm-up
    for (let run = 1; run <= runs; run++) {
      for (const rung of RUNGS) {
        // pg_stat_database is updated when a backend reports (at most every ~0.5 s): let it settle
        await new Promise((r) => setTimeout(r, 1000))
        const [cpu0, x0] = [cpuSeconds(apiPid), await transactions()]
        const result = await load(stack.baseUrl, rung, stack.apiKey, channels, duration)
        await new Promise((r) => setTimeout(r, 1000))
        const [cpu1, x1] = [cpuSeconds(apiPid), await transactions()]
        const answered = result.statusCodeStats[String(rung.expect)]?.count ?? 0
        const total = result.requests.total
        if (answered !== total) {
          throw new Error(
            `${rung.name}: ${total - answered} of ${total} answers were not ${rung.expect}: ${
              JSON.stringify(result.statusCodeStats)
            }`
          )
        }
        const s = samples.get(rung.name)!
        s.cpu.push(((cpu1 - cpu0) * 1000) / total)
        // minus the two reads of pg_stat_database around the phase
        s.xacts.push((x1 - x0 - 2) / total)
        s.rps.push(total / result.duration)
        console.log(
          `run ${run} ${rung.name.padEnd(10)}: ${(total / result.duration).toFixed(1)} req/s, api CPU ${
            (((cpu1 - cpu0) * 1000) / total).toFixed(3)
          } ms/req, ${((x1 - x0 - 2) / total).toFixed(2)} transactions/req`
        )
      }
    }
    console.log(`\nsummary over ${runs} runs (median [min–max]), ${connections} connections, ${duration} s each:`)
    let previous: number | undefined
    const summary: Record<string, unknown> = {}
    for (const rung of RUNGS) {
      const s = samples.get(rung.name)!
      const cpu = summarize(s.cpu)
      const delta = previous === undefined ? cpu.median : cpu.median - previous
      previous = cpu.median
      summary[rung.name] = {
        cpu_ms_per_req: cpu,
        delta_ms: delta,
        xacts_per_req: summarize(s.xacts),
        rps: summarize(s.rps)
      }
      console.log(
        `  ${rung.name.padEnd(10)} api CPU ${formatSummary(cpu, 3)} ms/req (+${delta.toFixed(3)}), ${
          formatSummary(summarize(s.xacts), 2)
        } transactions/req, ${formatSummary(summarize(s.rps))} req/s`
      )
    }
    console.log(record("sendLadder", { runs, duration, connections, channels: channelCount, summary }))
  } finally {
    await stack.stop()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
