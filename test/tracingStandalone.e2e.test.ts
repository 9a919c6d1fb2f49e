/**
 * `npm start` with tracing (docs/CONFIGURATION.md "Tracing"): the standalone process on its embedded database,
 * exporting to an in-test collector, makes one trace of a send from the HTTP request through the
 * `Wake` to the dispatch, all in one process, and writes its id into the request's log lines.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { seededDataDir } from "@switchboard/db/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { eventually, startCollector } from "./support/OtlpCollector.js"
import type { Collector } from "./support/OtlpCollector.js"
import { call, freePort, startService, waitUntilUp } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const RECIPIENT = "+4915112345678"

describe("tracing in the standalone process", () => {
  let service: ServiceProcess
  let collector: Collector
  let dataDir: string

  beforeAll(async () => {
    // already migrated: the first start from nothing is test/quickstart.test.ts's
    dataDir = await seededDataDir(mkdtempSync(join(tmpdir(), "sb-tracing-")))
    collector = await startCollector()
    service = startService("standalone", {
      DATA_DIR: dataDir,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: "200"
    }, await freePort())
    await waitUntilUp(service, "/ready", 120_000)
  }, 150_000)

  afterAll(async () => {
    await service?.stop()
    await collector?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("makes one trace of a send, from the request to the dispatch", async () => {
    const email = "tracing@example.com"
    const password = "tracing standalone password"
    const registered = await call(service.baseUrl, "POST", "/v1/auth/register", {
      body: { email, password, name: "T", workspace_name: "T" }
    })
    assert.strictEqual(registered.status, 201, registered.text)
    const token = /token: ([A-Za-z0-9_-]+)/.exec(service.output())?.[1]
    assert.strictEqual((await call(service.baseUrl, "POST", "/v1/auth/verify-email", { body: { token } })).status, 200)
    const login = await call(service.baseUrl, "POST", "/v1/auth/login", { body: { email, password } })
    const key = await call(service.baseUrl, "POST", "/v1/api-keys", {
      token: login.body.access_token,
      workspace: registered.body.workspace.id,
      body: { name: "k", mode: "test" }
    })
    assert.strictEqual(key.status, 201, key.text)
    const sandbox = await call(service.baseUrl, "POST", "/v1/sandbox/sessions", { token: key.body.secret })
    const verified = await call(service.baseUrl, "POST", `/v1/sandbox/sessions/${sandbox.body.id}/verify`, {
      token: key.body.secret,
      body: { phone_number: RECIPIENT, code: sandbox.body.verification.code }
    })
    assert.strictEqual(verified.status, 200, verified.text)
    const sent = await call(service.baseUrl, "POST", "/v1/messages", {
      token: key.body.secret,
      body: { to: RECIPIENT, channel_id: sandbox.body.channel_id, text: { body: "hi" } }
    })
    assert.strictEqual(sent.status, 201, sent.text)

    const trace = await eventually(
      () => {
        const http = collector.spans.find((s) => s.name === "POST /v1/messages")
        const trace = http && collector.spans.filter((s) => s.traceId === http.traceId)
        return trace?.some((s) => s.name === "Channel.dispatch") ? trace : undefined
      },
      60_000,
      "the send's trace"
    )
    const names = new Set(trace.map((s) => s.name))
    for (const name of ["POST /v1/messages", "Messages.send", "SendWritesRepo.write", "Channel.client.Wake"]) {
      assert.isTrue(names.has(name), `${name} in ${[...names].join(", ")}`)
    }
    assert.isTrue([...names].some((n) => /^Channel\(ch_[^)]+\)\.Wake$/.test(n)))
    assert.deepStrictEqual(new Set(trace.map((s) => s.service)), new Set(["switchboard"]))
    const http = trace.find((s) => s.name === "POST /v1/messages")!
    assert.include(service.output(), `"trace_id":"${http.traceId}"`)
    assert.notInclude(JSON.stringify(collector.spans.map((s) => s.raw)), RECIPIENT.slice(1))
  }, 90_000)
})
