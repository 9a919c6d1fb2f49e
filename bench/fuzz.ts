/**
 * The long fuzz run (test/contractFuzz.test.ts and test/rawBytes.test.ts are its bounded, seeded
 * versions in CI). Two phases against a real stack (own database, an api node and a runner:
 * bench/lib/Stack.ts), or against `--base` with a verified user's `--email`/`--password`:
 *
 * - contract: requests generated from the schemas the `HttpApi` is built from
 *   (test/support/ContractFuzz.ts), valid or broken one way, round-robin over every operation;
 *   each answer judged as in the test (no 5xx; broken -> 422 `VALIDATION_ERROR` with issues and
 *   no echo; otherwise a documented status; the body decodes against its declared schema) and,
 *   with an `Idempotency-Key`, repeated and compared byte for byte;
 * - hostile: bench/lib/HostileFuzz.ts (the former scripts/fuzz.ts): hostile values, raw bodies,
 *   path ids, query values and headers from `/openapi.json`, under four kinds of credential.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \
 *     flock /tmp/sb-bench.lock npm run bench:fuzz -- [--contract 10000] [--hostile 10000] [--seed 1]
 *
 * Exit 1 on any violation, 5xx or dropped connection; one JSON line in bench/results/fuzz.jsonl.
 */
import { Scopes } from "@switchboard/domain"
import { FastCheck as fc } from "effect"
import { caseArbitrary, harvest, judge, operations, prepare, VIOLATIONS } from "../test/support/ContractFuzz.js"
import type { Case, Operation, Pool, Prepared, Violation } from "../test/support/ContractFuzz.js"
import { call } from "../test/support/Processes.js"
import { runHostile } from "./lib/HostileFuzz.js"
import { flag, numberFlag, record } from "./lib/Measure.js"
import { startStack } from "./lib/Stack.js"
import type { Stack } from "./lib/Stack.js"

const CONTRACT = numberFlag("contract", 10_000)
const HOSTILE = numberFlag("hostile", 10_000)
const CONCURRENCY = numberFlag("concurrency", 8)
const SEED = numberFlag("seed", 1)

const log = (line: string) => console.log(`[fuzz] ${line}`)

interface Credentials {
  readonly base: string
  readonly session: string
  readonly workspace: string
  readonly key: string
  readonly live: string
  readonly own: ReadonlySet<string>
}

const signIn = async (): Promise<{ credentials: Credentials; stack?: Stack }> => {
  let stack: Stack | undefined
  let base: string
  let session: string
  let workspace: string
  const own = new Set<string>()
  if (typeof flag("base") === "string") {
    base = String(flag("base")).replace(/\/$/, "")
    const login = await call(base, "POST", "/v1/auth/login", {
      body: { email: flag("email"), password: flag("password") }
    })
    if (login.status !== 200) throw new Error(`login: ${login.text}`)
    session = login.body.access_token
    workspace = String(flag("workspace") ?? login.body.workspaces?.[0]?.id ?? "")
    own.add(login.body.user.id)
  } else {
    stack = await startStack({ name: "fuzz", runners: 1 })
    base = stack.baseUrl
    session = stack.sessionToken
    workspace = stack.workspaceId
    await stack.sandboxChannels(1)
  }
  const keys: Array<string> = []
  for (const mode of ["test", "live"]) {
    const created = await call(base, "POST", "/v1/api-keys", {
      token: session,
      workspace,
      body: { name: `fuzz ${mode}`, mode, scopes: Scopes.SCOPES }
    })
    if (created.status !== 201) throw new Error(`api key: ${created.text}`)
    keys.push(created.body.secret)
    own.add(created.body.id)
  }
  const me = await call(base, "GET", "/v1/auth/me", { token: session, workspace })
  if (me.status === 200 && typeof me.body.user?.id === "string") own.add(me.body.user.id)
  for (
    const line of (await call(base, "GET", "/v1/api-keys?limit=100", { token: session, workspace })).body.data ?? []
  ) {
    own.add(line.id)
  }
  return { credentials: { base, session, workspace, key: keys[0]!, live: keys[1]!, own }, ...(stack ? { stack } : {}) }
}

const send = async (creds: Credentials, op: Operation, req: Prepared) => {
  const headers: Record<string, string> = { "content-type": "application/json" }
  if (op.auth === "key") headers["authorization"] = `Bearer ${creds.key}`
  if (op.auth === "session") {
    headers["authorization"] = `Bearer ${creds.session}`
    headers["x-workspace-id"] = creds.workspace
  }
  if (req.idempotencyKey !== undefined) headers["idempotency-key"] = req.idempotencyKey
  const response = await fetch(creds.base + req.url, {
    method: req.method,
    headers,
    ...(req.body === undefined ? {} : { body: req.body }),
    signal: AbortSignal.timeout(30_000)
  })
  return { status: response.status, text: await response.text() }
}

const runContract = async (creds: Credentials) => {
  const fuzzed = operations.filter((op) => (op.payload || op.pathParams || op.query) && !op.path.endsWith("/stream"))
  const perOp = Math.ceil(CONTRACT / fuzzed.length)
  const queue: Array<readonly [Operation, Case]> = []
  const samples = fuzzed.map((op) => fc.sample(caseArbitrary(op), { seed: SEED, numRuns: perOp }))
  // generated uuids repeat (fast-check favours small values): each case gets its own key
  for (let i = 0; i < perOp; i++) {
    fuzzed.forEach((op, j) => queue.push([op, { ...samples[j]![i]!, idempotencyKey: `fuzz-${SEED}-${i}-${j}` }]))
  }
  const pool: Pool = new Map()
  const violations = Object.fromEntries(VIOLATIONS.map((v) => [v, 0])) as Record<Violation, number>
  const statuses = new Map<number, number>()
  const examples: Array<string> = []
  let requests = 0
  let broken = 0
  let dropped = 0
  let next = 0
  const started = Date.now()
  const count = (found: ReadonlyArray<Violation>, label: string, status: number, text: string) => {
    for (const v of found) violations[v]++
    if (found.length > 0 && examples.length < 30) {
      examples.push(`${found.join(",")} ${label}: ${status} ${text.slice(0, 200)}`)
    }
  }
  const worker = async () => {
    while (next < queue.length) {
      const [op, c] = queue[next++]!
      const req = prepare(op, c, pool)
      if (req.broken) broken++
      try {
        requests++
        const answer = await send(creds, op, req)
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        count(judge(op, req, answer), req.label, answer.status, answer.text)
        if (answer.status < 300 && answer.text !== "") harvest(pool, JSON.parse(answer.text), creds.own)
        if (req.idempotencyKey !== undefined) {
          requests++
          const again = await send(creds, op, req)
          if (again.status !== answer.status || again.text !== answer.text) {
            count(["repeat differs"], req.label, again.status, again.text)
          }
        }
      } catch (e) {
        dropped++
        if (examples.length < 30) {
          examples.push(`dropped ${req.label}: ${String((e as Error).cause ?? e).slice(0, 160)}`)
        }
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return {
    operations: fuzzed.length,
    cases: queue.length,
    broken_cases: broken,
    requests,
    seconds: Math.round((Date.now() - started) / 1000),
    statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)),
    violations,
    dropped,
    examples
  }
}

const main = async () => {
  const { credentials, stack } = await signIn()
  try {
    log(`contract phase: ${CONTRACT} cases, concurrency ${CONCURRENCY}, seed ${SEED}`)
    const contract = await runContract(credentials)
    const { examples: contractExamples, ...contractCounts } = contract
    log(JSON.stringify(contractCounts))
    for (const e of contractExamples) log(`  ${e}`)
    log(`hostile phase: ${HOSTILE} requests`)
    const hostile = await runHostile(credentials.base, {
      session: { authorization: `Bearer ${credentials.session}`, "x-workspace-id": credentials.workspace },
      test: credentials.key,
      live: credentials.live
    }, { total: HOSTILE, concurrency: CONCURRENCY, seed: SEED })
    const { failures, ...hostileCounts } = hostile
    log(JSON.stringify(hostileCounts))
    for (const f of failures.slice(0, 30)) log(`  ${f}`)
    console.log(
      record("fuzz", { seed: SEED, concurrency: CONCURRENCY, contract: contractCounts, hostile: hostileCounts })
    )
    const bad = Object.values(contract.violations).reduce((a, b) => a + b, 0) + contract.dropped + hostile["5xx"] +
      hostile.dropped
    process.exitCode = bad > 0 ? 1 : 0
  } finally {
    if (stack) {
      await stack.stop()
    }
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(2)
})
