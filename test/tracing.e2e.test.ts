/**
 * Traces across processes (docs/CONFIGURATION.md "Tracing"): an api node and a runner on real Postgres, both
 * exporting to an in-test OTLP/HTTP collector (JSON). One sandbox send is ONE trace: the HTTP
 * request and its SQL on the api node, the `Wake` to the channel's entity, and the dispatch on
 * the runner. Probes are not traced; no span carries a credential or the recipient's number; the
 * api node's log lines inside the request carry its trace id.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { eventually, startCollector } from "./support/OtlpCollector.js"
import type { CollectedSpan, Collector } from "./support/OtlpCollector.js"
import { admin, call, freePort, READY_DEADLINE_MS, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()

const PASSWORD = "tracing test password 42"
const RECIPIENT = "+4915112345678"
const JWT_SECRET = "tracing-test-jwt-secret-0123456789"
const PEPPER = "tracing-test-pepper-0123456789"

describe.skipIf(url === undefined)("traces across the api node and a runner", () => {
  const processes: Array<ServiceProcess> = []
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let collector: Collector
  let api: ServiceProcess
  const secrets: Record<string, string> = {}
  let messageId: string

  beforeAll(async () => {
    database = await e2eDatabase(url!, "tracing")
    collector = await startCollector()
    const env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: "info",
      JWT_SECRET,
      API_KEY_PEPPER: PEPPER,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      SANDBOX_NUMBERS: "+15550000001",
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "200"
    }
    const [cluster, runnerHttp, apiHttp] = await Promise.all([freePort(), freePort(), freePort()])
    processes.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(cluster) }, runnerHttp))
    // DEBUG: a healthy probe's access line is DEBUG (docs/CONFIGURATION.md `LOG_REQUESTS`), and it is read below
    api = startService("api", { ...env, LOG_LEVEL: "debug" }, apiHttp)
    processes.push(api)
    await waitFor(`${api.baseUrl}/ready`, READY_DEADLINE_MS, 200, api)
    await call(api.baseUrl, "GET", "/health")

    const adminEnv = { DATABASE_URL: database.url, JWT_SECRET, API_KEY_PEPPER: PEPPER }
    const created = await admin(
      ["create-user", "--email", "tracing@example.com", "--password", PASSWORD, "--name", "T", "--workspace", "T"]
        .concat(["--verified"]),
      adminEnv
    )
    const login = await call(api.baseUrl, "POST", "/v1/auth/login", {
      body: { email: "tracing@example.com", password: PASSWORD }
    })
    assert.strictEqual(login.status, 200, login.text)
    secrets["session token"] = login.body.access_token
    secrets["refresh token"] = login.body.refresh_token
    const session = { token: login.body.access_token as string, workspace: created.workspace_id as string }
    const key = await call(api.baseUrl, "POST", "/v1/api-keys", { ...session, body: { name: "t", mode: "test" } })
    assert.strictEqual(key.status, 201, key.text)
    secrets["API key"] = key.body.secret
    const hook = await call(api.baseUrl, "POST", "/v1/webhook-endpoints", {
      ...session,
      body: { url: `${collector.url}/hook`, event_types: ["*"] }
    })
    assert.strictEqual(hook.status, 201, hook.text)
    secrets["webhook secret"] = hook.body.secret
    const sandbox = await call(api.baseUrl, "POST", "/v1/sandbox/sessions", { token: key.body.secret })
    assert.strictEqual(sandbox.status, 201, sandbox.text)
    const verified = await call(api.baseUrl, "POST", `/v1/sandbox/sessions/${sandbox.body.id}/verify`, {
      token: key.body.secret,
      body: { phone_number: RECIPIENT, code: sandbox.body.verification.code }
    })
    assert.strictEqual(verified.status, 200, verified.text)

    // a number in the query string: the parameter is refused (422) and its request is traced
    // without it (the last test)
    const refused = await fetch(`${api.baseUrl}/v1/messages?trace=${encodeURIComponent(RECIPIENT)}`, {
      headers: { authorization: `Bearer ${key.body.secret}` }
    })
    assert.strictEqual(refused.status, 422)
    const sent = await fetch(`${api.baseUrl}/v1/messages`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${key.body.secret}`,
        "idempotency-key": "tracing-1"
      },
      body: JSON.stringify({ to: RECIPIENT, channel_id: sandbox.body.channel_id, text: { body: "hello" } })
    })
    assert.strictEqual(sent.status, 201)
    messageId = ((await sent.json()) as { id: string }).id
    await call(api.baseUrl, "GET", "/ready")
  }, 240_000)

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await collector?.close()
    await database?.drop()
  }, 60_000)

  const sendTrace = () =>
    eventually(
      () => {
        const http = collector.spans.find((s) => s.name === "POST /v1/messages" && s.service === "switchboard-api")
        if (http === undefined) return undefined
        const trace = collector.spans.filter((s) => s.traceId === http.traceId)
        const dispatch = trace.find((s) => s.name === "Channel.dispatch")
        // the dispatch's own calls (its in-process moves of the message) come in a later batch, and
        // each process exports on its own schedule: the api node's Wake span (it ends when the
        // runner answered) may arrive after the runner's dispatch
        const complete = dispatch !== undefined && trace.some((s) => s.parentSpanId === dispatch.spanId) &&
          trace.some((s) => s.name === "Channel.client.Wake" && s.service === "switchboard-api")
        return complete ? { http, trace } : undefined
      },
      60_000,
      "the send's trace"
    )

  it("follows a send from the HTTP request through the Wake to the dispatch on the runner", async () => {
    const { http, trace } = await sendTrace()
    const names = (service: string) => new Set(trace.filter((s) => s.service === service).map((s) => s.name))
    const onApi = names("switchboard-api")
    const onRunner = names("switchboard-runner")
    assert.strictEqual(http.parentSpanId, undefined, "the request's span is the root")
    assert.strictEqual(http.attributes["http.response.status_code"], 201)
    assert.strictEqual(http.attributes["http.route"], "/v1/messages")
    assert.isTrue(onApi.has("Messages.send"), [...onApi].join(", "))
    // the send's writes are one statement, no transaction (SendWritesRepo)
    assert.isTrue(onApi.has("SendWritesRepo.write"), [...onApi].join(", "))
    assert.isTrue(onApi.has("sql.execute"), [...onApi].join(", "))
    assert.isTrue(onApi.has("Channel.client.Wake"), [...onApi].join(", "))
    assert.isTrue([...onRunner].some((n) => /^Channel\(ch_[^)]+\)\.Wake$/.test(n)), [...onRunner].join(", "))
    const dispatch = trace.find((s) => s.name === "Channel.dispatch")!
    assert.strictEqual(dispatch.service, "switchboard-runner")
    assert.strictEqual(dispatch.attributes["message.id"], messageId)
    // the provider's call is under the dispatch; its statements (the take, the sandbox network's
    // record of the offer, the acceptance) are shared by the runner's channels, traces of their own
    const providerCall = trace.find((s) => s.name === "ChannelProvider.send")
    assert.strictEqual(providerCall?.parentSpanId, dispatch.spanId, [...onRunner].join(", "))
    // every span of the trace hangs from the request's: one tree, across both processes
    const byId = new Map(trace.map((s) => [s.spanId, s]))
    const root = (s: CollectedSpan): CollectedSpan => {
      const parent = s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId)
      return parent === undefined ? s : root(parent)
    }
    for (const span of trace) assert.strictEqual(root(span).spanId, http.spanId, `${span.service} ${span.name}`)
    const statement = trace.find((s) => s.name === "sql.execute")!
    assert.include(String(statement.attributes["db.query.text"]), "$1", "statements carry placeholders")
  }, 90_000)

  it("traces each webhook attempt on the runner, without its URL", async () => {
    const attempt = await eventually(
      () =>
        collector.spans.find((s) => s.name === "WebhookEndpoint.deliver" && s.attributes["webhook.outcome"] === "ok"),
      60_000,
      "a delivered webhook attempt"
    )
    assert.strictEqual(attempt.service, "switchboard-runner")
    assert.strictEqual(attempt.attributes["http.response.status_code"], 200)
    assert.strictEqual(attempt.parentSpanId, undefined)
    // its pull and its success are statements shared by the runner's endpoints (README
    // "Architecture": a hot single statement may be shared), so they are not in its trace
    assert.notInclude(JSON.stringify(collector.spans.map((s) => s.raw)), "/hook")
  }, 90_000)

  it("does not trace probes", async () => {
    await sendTrace()
    const probes = collector.spans.filter((s) =>
      /health|ready/.test(s.name) || /^\/(health|ready)/.test(String(s.attributes["url.path"] ?? ""))
    )
    assert.deepStrictEqual(probes.map((s) => s.name), [])
  }, 90_000)

  it("exports no credential, secret or phone number", async () => {
    await sendTrace()
    // the webhook delivery (runner) is under way too: give its spans a moment
    await eventually(() => (collector.other.length > 0 ? true : undefined), 30_000, "a webhook delivery")
    await new Promise((r) => setTimeout(r, 1_000))
    const everything = JSON.stringify(collector.spans.map((s) => s.raw))
    assert.isAbove(collector.spans.length, 20)
    for (
      const [what, secret] of [
        ...Object.entries(secrets),
        ["API key without its prefix", secrets["API key"]!.slice(8)],
        ["password", PASSWORD],
        ["JWT secret", JWT_SECRET],
        ["API key pepper", PEPPER],
        ["recipient", RECIPIENT],
        ["recipient's digits", RECIPIENT.slice(1)]
      ]
    ) {
      assert.isString(secret, what)
      const at = everything.indexOf(secret!)
      assert.strictEqual(at, -1, `${what} is in an exported span: ${everything.slice(Math.max(0, at - 300), at + 100)}`)
    }
    assert.notInclude(everything.toLowerCase(), "authorization", "no header is recorded")
  }, 90_000)

  it("writes the trace id into the api node's log lines of the request", async () => {
    const { http } = await sendTrace()
    const lines = api.output().split("\n").filter((l) => l.includes(`"trace_id":"${http.traceId}"`))
    assert.isAbove(lines.length, 0, api.output().slice(-3000))
    const probe = api.output().split("\n").filter((l) => l.includes("/health") && l.includes("Sent HTTP response"))
    assert.isAbove(probe.length, 0, "the probe's access line")
    for (const line of probe) assert.notInclude(line, "trace_id")
  }, 90_000)
})
