/**
 * The hostile half of bench/fuzz.ts (formerly scripts/fuzz.ts): reads `/openapi.json` of the
 * server and sends hostile requests to every operation (bodies built from each request schema and
 * then mutated member by member, raw malformed bodies, hostile path ids and query values, odd
 * headers), signed in with a user session, a test key, a live key and no credential. Counts every
 * status, every 5xx and every connection the server dropped without an answer.
 */

// a small seeded PRNG, so a run can be repeated
let state = 1
const rand = () => ((state = (Math.imul(state ^ (state >>> 15), 1 | state) + 0x6d2b79f5) >>> 0) / 2 ** 32)
const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(rand() * xs.length)]!
let BASE = ""

const deep = (n: number) => "[".repeat(n) + "]".repeat(n)
const HOSTILE: ReadonlyArray<unknown> = [
  null,
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "x".repeat(70_000),
  "💥".repeat(2000),
  "\u202e\u0301",
  "\ud800",
  -1,
  0,
  1.5,
  1e308,
  -1e308,
  2 ** 53 + 1,
  true,
  false,
  [],
  {},
  [[[[[]]]]],
  { "__proto__": { "x": 1 } },
  "../../etc/passwd",
  "' OR 1=1 --",
  "<script>alert(1)</script>",
  "${jndi:ldap://x}",
  "%00",
  "NaN",
  "+",
  "+1",
  "+15550000000",
  "+4915112345678",
  "+" + "9".repeat(40),
  "ch_",
  "ch_" + "Z".repeat(26),
  "http://127.0.0.1/",
  "http://[::1]/",
  "http://169.254.169.254/latest",
  "https://example.com/" + "a".repeat(3000),
  "*",
  ["*"],
  ["message.received", "message.received"],
  ["nope"],
  "2026-13-45T99:99:99Z",
  "0x10",
  "1e3"
]
const RAW_BODIES: ReadonlyArray<string> = [
  ...["{", "}", "[", "null", "1", "\"s\"", "{\"a\":}", "\ufeff{}", "{\"a\":1,\"a\":2}", "\u0000", "garbage"],
  ...[deep(5000), deep(100_000), "{\"x\":\"\\ud800\"}", "{\"text\":{\"body\":\"\\u0000\"}}"],
  ...["{\"to\":" + "9".repeat(5000) + "}", "{{{" + "\"a\"".repeat(10), "{\"constructor\":{\"prototype\":{}}}"]
]
const PATH_IDS: ReadonlyArray<string> = [
  ..."x %00 ..%2f..%2f ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z %F0%9F%92%A5 %ZZ null -1 %2e%2e".split(" "),
  ...["ch_", "key_", "wh_", "whd_", "sbx_", "msg_"].map((p, i) => p + "AZ0123"[i]!.repeat(26)),
  "A".repeat(5000)
]

type Schema = {
  $ref?: string
  type?: string | Array<string>
  properties?: Record<string, Schema>
  required?: Array<string>
  items?: Schema
  enum?: Array<unknown>
  anyOf?: Array<Schema>
  oneOf?: Array<Schema>
  allOf?: Array<Schema>
  minLength?: number
  pattern?: string
  format?: string
  const?: unknown
}
type Spec = {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: Array<{ name: string; in: string; schema?: Schema }>
        requestBody?: { content: Record<string, { schema: Schema }> }
      }
    >
  >
  components?: { schemas?: Record<string, Schema> }
}

let spec: Spec
const resolve = (s: Schema | undefined): Schema => {
  let cur = s ?? {}
  for (let i = 0; cur.$ref && i < 20; i++) cur = spec.components?.schemas?.[cur.$ref.split("/").pop()!] ?? {}
  return cur
}

/** A plausible instance of `schema` (what a well-behaved client would send), depth-limited. */
const sample = (raw: Schema | undefined, depth = 0): unknown => {
  const s = resolve(raw)
  if (depth > 6) return null
  if (s.const !== undefined) return s.const
  if (s.enum) return pick(s.enum)
  const alts = s.anyOf ?? s.oneOf
  if (alts) return sample(pick(alts), depth + 1)
  if (s.allOf) return Object.assign({}, ...s.allOf.map((a) => sample(a, depth + 1)))
  const type = Array.isArray(s.type) ? pick(s.type) : s.type
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(s.properties ?? {})) {
        if (s.required?.includes(k) || rand() < 0.5) out[k] = sample(v, depth + 1)
      }
      return out
    }
    case "array":
      return [sample(s.items, depth + 1)]
    case "integer":
      return Math.floor(rand() * 50)
    case "number":
      return rand() * 50
    case "boolean":
      return rand() < 0.5
    case "null":
      return null
    case "string":
      if (s.format === "uri" || /url/i.test(s.pattern ?? "")) return "https://example.com/hook"
      if (s.pattern?.includes("\\+")) return "+4915112345678"
      return "s".repeat(Math.max(1, s.minLength ?? 1))
    default:
      return "x"
  }
}

/** One member of a sampled body replaced, removed or added. */
const mutate = (body: unknown): unknown => {
  if (body === null || typeof body !== "object" || Array.isArray(body) || rand() < 0.1) return pick(HOSTILE)
  const copy: Record<string, unknown> = { ...(body as Record<string, unknown>) }
  const keys = Object.keys(copy)
  const roll = rand()
  if (keys.length > 0 && roll < 0.6) {
    const k = pick(keys)
    copy[k] = rand() < 0.3 ? mutate(copy[k]) : pick(HOSTILE)
  } else if (keys.length > 0 && roll < 0.8) delete copy[pick(keys)]
  else copy[pick(["extra", "\u0000", "__proto__", "a".repeat(300)])] = pick(HOSTILE)
  return copy
}

/** Percent-encodes; a lone surrogate (which `encodeURIComponent` refuses) goes as invalid UTF-8 bytes. */
const enc = (v: string) => {
  try {
    return encodeURIComponent(v)
  } catch {
    return "%ED%A0%80"
  }
}

interface Req {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
}
const build = (
  pathTemplate: string,
  method: string,
  op: Spec["paths"][string][string],
  creds: HostileCredentials
): Req => {
  const path = pathTemplate.replace(/\{(\w+)\}/g, () => enc(pick(PATH_IDS)).replace(/%25/g, "%"))
  const query = (op.parameters ?? []).filter((p) => p.in === "query")
  const qs: Array<string> = []
  for (const p of query) {
    if (rand() < 0.5) qs.push(`${p.name}=${enc(String(rand() < 0.5 ? sample(p.schema) : pick(HOSTILE)))}`)
  }
  if (rand() < 0.15) {
    qs.push(pick(["limit=0", "limit=101", "limit=1&limit=2", "after=%00", "x%00=1", "status[]=a", "%ZZ=1"]))
  }
  const headers: Record<string, string> = {}
  const who = rand()
  if (who < 0.35) Object.assign(headers, creds.session)
  else if (who < 0.7) headers.authorization = `Bearer ${creds.test}`
  else if (who < 0.85) headers.authorization = `Bearer ${creds.live}`
  else if (who < 0.93) {
    headers.authorization = pick(["Bearer ", "Bearer wa_test_x", "Basic abc", "Bearer " + "a".repeat(4000)])
  }
  if (rand() < 0.1) headers["x-workspace-id"] = pick(["ws_x", "", "ws_" + "0".repeat(26), "%00"])
  if (rand() < 0.1) headers["idempotency-key"] = pick(["k", "k".repeat(300), " ", "é"])
  let body: string | undefined
  const schema = op.requestBody?.content["application/json"]?.schema
  if (method !== "GET" && (schema || rand() < 0.1)) {
    headers["content-type"] = rand() < 0.92
      ? "application/json"
      : pick(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"])
    const r = rand()
    body = r < 0.15 ? pick(RAW_BODIES) : JSON.stringify(r < 0.3 ? sample(schema) : mutate(sample(schema)))
  }
  return {
    method,
    path: path + (qs.length ? `?${qs.join("&")}` : ""),
    headers,
    ...(body === undefined ? {} : { body })
  }
}

const call = async (req: Req) => {
  const response = await fetch(BASE + req.path, {
    method: req.method,
    headers: req.headers,
    ...(req.body === undefined ? {} : { body: req.body }),
    redirect: "manual",
    signal: AbortSignal.timeout(30_000)
  })
  const text = await response.text()
  return { status: response.status, text }
}

export interface HostileCredentials {
  /** `authorization` and `x-workspace-id` of a signed-in user */
  readonly session: Record<string, string>
  readonly test: string
  readonly live: string
}

export interface HostileResult {
  readonly operations: number
  readonly requests: number
  readonly answered: number
  readonly seconds: number
  readonly statuses: Record<string, number>
  /** 5xx other than the documented 503 `SANDBOX_NO_NUMBER_AVAILABLE` */
  readonly "5xx": number
  readonly sandbox_pool_exhausted_503: number
  readonly dropped: number
  readonly failures: ReadonlyArray<string>
}

export const runHostile = async (
  base: string,
  creds: HostileCredentials,
  options: { readonly total: number; readonly concurrency: number; readonly seed: number }
): Promise<HostileResult> => {
  BASE = base.replace(/\/$/, "")
  state = options.seed >>> 0 || 1
  spec = await (await fetch(`${BASE}/openapi.json`)).json() as Spec
  const operations = Object.entries(spec.paths).flatMap(([path, ops]) =>
    Object.entries(ops).filter(([m]) => ["get", "post", "patch", "put", "delete"].includes(m))
      .filter(([, op]) => !path.endsWith("/qr/stream") && !path.startsWith("/v1/auth/logout"))
      .map(([method, op]) => ({ path, method: method.toUpperCase(), op }))
  )
  const statuses = new Map<number, number>()
  const failures: Array<string> = []
  let dropped = 0
  let poolExhausted = 0
  let sent = 0
  const started = Date.now()
  const worker = async () => {
    while (sent < options.total) {
      sent++
      const { method, op, path } = pick(operations)
      const req = build(path, method, op, creds)
      try {
        const r = await call(req)
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1)
        if (r.status === 503 && r.text.includes("\"SANDBOX_NO_NUMBER_AVAILABLE\"")) {
          // documented: the shared sandbox pool is exhausted (the fuzzer opens sessions until it is)
          poolExhausted++
        } else if (r.status >= 500) {
          failures.push(`${r.status} ${req.method} ${req.path.slice(0, 120)} ${r.text.slice(0, 200)}`)
        }
      } catch (e) {
        // fetch refusing to send (a header it will not encode) is not the server's doing
        if (e instanceof TypeError && /header|ByteString|Invalid/i.test(String(e.message) + String((e as any).cause))) {
          continue
        }
        dropped++
        failures.push(`dropped ${req.method} ${req.path.slice(0, 120)} ${String((e as any).cause ?? e).slice(0, 160)}`)
      }
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, worker))
  return {
    operations: operations.length,
    requests: sent,
    answered: [...statuses.values()].reduce((a, b) => a + b, 0),
    seconds: Math.round((Date.now() - started) / 1000),
    statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)),
    "5xx": [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0) - poolExhausted,
    sandbox_pool_exhausted_503: poolExhausted,
    dropped,
    failures
  }
}
