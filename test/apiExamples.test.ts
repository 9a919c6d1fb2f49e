/**
 * The examples of the served OpenAPI document (packages/api/src/ApiExamples.ts) are sent, in their
 * order, to a running server, and each answer must match its response example: same status, same
 * members, same values, but for ids (an example id stands for the nth id of its kind the story met,
 * and is replaced by the real one in every later request), timestamps, secrets and the sandbox's
 * verification code. So an example cannot go stale. `WRITE_API_EXAMPLES=1` records the answers as
 * the new response examples: one JSON file per API group (packages/api/src/examples/<group>.json)
 * and the module that gathers them (packages/api/src/ApiExampleResponses.ts).
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { ApiExamples } from "@switchboard/api"
import { Scopes, Webhooks } from "@switchboard/domain"
import { Effect } from "effect"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { createKey, mailedToken, request, signUp } from "./support/Fixtures.js"
import { appWith, Wa } from "./support/QrApp.js"
import { receiver } from "./support/Receiver.js"
import * as Sse from "./support/SseClient.js"

const WRITE = process.env["WRITE_API_EXAMPLES"] === "1"
const root = resolve(import.meta.dirname, "..")

/**
 * Writes recorded answers by operation id: a JSON file per API group (the id's part before the
 * dot), and `ApiExampleResponses.ts`, which imports them (formatted as `npm run format` leaves it).
 */
const writeExamples = (recorded: Readonly<Record<string, unknown>>) => {
  const src = join(root, "packages", "api", "src")
  mkdirSync(join(src, "examples"), { recursive: true })
  const groups = new Map<string, Record<string, unknown>>()
  for (const [id, answer] of Object.entries(recorded)) {
    const group = id.slice(0, id.indexOf("."))
    groups.set(group, { ...groups.get(group), [id]: answer })
  }
  const names = [...groups.keys()].sort()
  for (const name of names) {
    writeFileSync(join(src, "examples", `${name}.json`), `${JSON.stringify(groups.get(name), null, 2)}\n`)
  }
  writeFileSync(
    join(src, "ApiExampleResponses.ts"),
    [
      "/**",
      " * The response examples of `ApiExamples.REQUESTS`, by operation id: what a server answered,",
      " * recorded by test/apiExamples.test.ts (`WRITE_API_EXAMPLES=1`), which writes this module and",
      " * `examples/<group>.json`, one per API group. Do not edit them by hand: the test fails when a",
      " * server's answer no longer matches.",
      " */",
      `import type { ResponseExample } from "./ApiExamples.js"`,
      ...names.map((name) => `import ${name} from "./examples/${name}.json" with { type: "json" }`),
      "",
      "export const RESPONSES: Readonly<Record<string, ResponseExample>> = {",
      names.map((name) => `  ...${name}`).join(",\n"),
      "}",
      ""
    ].join("\n")
  )
}

/** Operations without examples yet, each for the reason noted above it (none: every operation has its examples). */
const NOT_YET: ReadonlyArray<string> = []

/** The linked number of the story's QR channel, and the group chat its phone is in. */
const QR_PHONE = "+15550007777"
const GROUP_ID = "120363000000000001"
/** How a sandbox group chat's random WhatsApp id is shown. */
const SANDBOX_GROUP_ID = "120363000000000002"

const ID = /\b([a-z]{2,4})_([0-9A-HJKMNP-TV-Z]{26})\b/g
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/
const EXAMPLE_TIME = "2026-01-15T09:30:00.000Z"

/** Real ids and codes against the example ones, both ways, as the story meets them. */
class Placeholders {
  readonly toExample = new Map<string, string>()
  readonly toReal = new Map<string, string>()
  readonly counts = new Map<string, number>()
  readonly codes = new Set<string>()
  see(real: string, example: string) {
    if (this.toExample.has(real)) return
    this.toExample.set(real, example)
    this.toReal.set(example, real)
  }
  id(real: string, prefix: string) {
    if (!this.toExample.has(real)) {
      const n = (this.counts.get(prefix) ?? 0) + 1
      this.counts.set(prefix, n)
      this.see(real, ApiExamples.exampleId(prefix, n))
    }
    return this.toExample.get(real)!
  }
  /** An answer as its example shows it. */
  normalize(value: unknown, key = ""): unknown {
    if (typeof value === "string") {
      const known = this.toExample.get(value)
      if (known !== undefined) return known
      if (TIMESTAMP.test(value)) return EXAMPLE_TIME
      if (/^wa_(test|live)_/.test(value)) return value.slice(0, 8) + "x".repeat(Math.max(0, value.length - 8))
      if (/^whsec_/.test(value)) return "whsec_" + "x".repeat(value.length - 6)
      if (key === "code" && /^\d{6}$/.test(value)) {
        this.see(value, "123456")
        this.codes.add(value)
        return "123456"
      }
      if (key === "qr") return ApiExamples.QR_CODE
      // a sandbox group chat's WhatsApp id is random (120363 and twelve digits), the QR story's is GROUP_ID
      if (key === "whatsapp_group_id" && value !== GROUP_ID && /^120363\d{12}$/.test(value)) return SANDBOX_GROUP_ID
      if (key === "last4" || key === "secret_last4") return "x".repeat(value.length)
      if (key === "access_token") return ApiExamples.ACCESS_TOKEN
      if (key === "refresh_token") {
        this.see(value, ApiExamples.REFRESH_TOKEN)
        return ApiExamples.REFRESH_TOKEN
      }
      // a sandbox channel's name ends in a random tag: `Sandbox +15550200000 (R3QNRQ)`
      let shown = value.replace(ID, (real, prefix: string) => this.id(real, prefix))
        .replace(/^(Sandbox \+\d+ )\([0-9A-Z]{6}\)$/, "$1(ABC123)")
      for (const code of this.codes) shown = shown.split(code).join("123456")
      return shown
    }
    if (typeof value === "number" && key === "latency_ms") return 2
    if (Array.isArray(value)) return value.map((v) => this.normalize(v))
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.normalize(v, k)]))
    }
    return value
  }
  /** An example request as the real story sends it. */
  realize(value: unknown): unknown {
    if (typeof value === "string") {
      return this.toReal.get(value) ?? value.replace(ID, (example) => this.toReal.get(example) ?? example)
    }
    if (Array.isArray(value)) return value.map((v) => this.realize(v))
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.realize(v)]))
    }
    return value
  }
}

/** Answers that change for a while after the call before them (the sandbox's receipts): wait until settled. */
const settled: Record<string, (body: any) => boolean> = {
  "messages.get": (b) => b?.status === "read",
  "messages.list": (b) => Array.isArray(b?.data) && b.data.every((m: any) => m.status === "read"),
  "conversations.list": (b) => Array.isArray(b?.data) && b.data.length > 0 && b.data[0].unread_count > 0,
  "conversations.get": (b) => b?.unread_count > 0,
  "contactImports.get": (b) => b?.status === "completed",
  "webhooks.delivery": (b) => b?.status === "dead",
  "webhooks.endpointDeliveries": (b) =>
    Array.isArray(b?.data) && b.data.length === 2 && b.data.some((d: any) => d.status === "dead") &&
    b.data.some((d: any) => d.status === "succeeded"),
  "contactImports.list": (b) => Array.isArray(b?.data) && b.data.every((j: any) => j.status === "completed"),
  "qrPairing.status": (b) => b?.qr_available === true,
  "qrPairing.safety": (b) => b?.warm_up?.status === "warming_up",
  "groupChats.list": (b) => Array.isArray(b?.data) && b.data.length === 1 && b.data[0].participant_count === 2
}

/** An event stream's frames as its example shows them: `event:`, `id:` and `data:` lines, each frame ended by a blank line. */
const streamText = (frames: ReadonlyArray<Sse.SseFrame>, places: Placeholders) =>
  frames.map((f) =>
    `event: ${f.event}\n${f.id === undefined ? "" : `id: ${f.id}\n`}data: ${
      JSON.stringify(places.normalize(f.data))
    }\n\n`
  ).join("")

/**
 * `qrPairing.stream` as a browser reads it while the user links the number: the phone scans the code
 * the stream shows, and the stream ends once the channel is connected; answered as `request` answers.
 */
const pairOverStream = (path: string, user: { accessToken: string; workspaceId: string }, places: Placeholders) =>
  Effect.gen(function*() {
    const wa = yield* Wa
    const stream = yield* Sse.open(path, { token: user.accessToken, workspace: user.workspaceId })
    const snapshot = yield* stream.nextNamed("snapshot")
    const qr: string = snapshot.data.qr ?? (yield* stream.nextNamed("qr.updated")).data.qr
    yield* wa.phone.scan(qr)
    yield* stream.ended
    return { status: stream.status, text: streamText(stream.frames, places) }
  })

/** The file an example with a file body (`media.upload`) uploads: its bytes as the body, not JSON. */
const PICTURE = readFileSync(join(root, "docs", "examples", "picture.png"))

/** `POST /v1/media` with the picture, answered as `request` answers. */
const upload = (path: string, token: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post(path).pipe(
        HttpClientRequest.bearerToken(token),
        HttpClientRequest.bodyUint8Array(PICTURE, "image/png")
      )
    )
    const text = yield* response.text
    return {
      status: response.status,
      headers: response.headers as Record<string, string>,
      body: JSON.parse(text),
      text
    }
  }).pipe(Effect.scoped, Effect.orDie)

describe("API examples", () => {
  layer(appWith({ phoneNumber: QR_PHONE }), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped(
      "every example of the served OpenAPI document, sent to the server, answers as its example shows",
      () =>
        Effect.gen(function*() {
          const spec = (yield* request("GET", "/openapi.json")).body
          const operations = new Map<string, { method: string; path: string; op: any }>()
          for (const [path, item] of Object.entries<any>(spec.paths)) {
            for (const [method, op] of Object.entries<any>(item)) operations.set(op.operationId, { method, path, op })
          }
          const covered = ApiExamples.REQUESTS.map(([id]) => id)
          assert.deepStrictEqual(
            [...operations.keys()].filter((id) => !covered.includes(id)).sort(),
            [...NOT_YET].sort(),
            "every operation has examples, but those listed as not yet"
          )
          // the story's QR channel links the fake phone, which is in one group chat with two contacts
          const wa = yield* Wa
          const alice = wa.contact("+447700900501")
          const bob = wa.contact("+447700900502")
          wa.group({
            id: GROUP_ID,
            subject: "Berlin store team",
            description: "Orders and shifts",
            members: [alice, bob],
            admins: [alice]
          })
          const user = yield* signUp("ada@example.com")
          const key = yield* createKey(user, { mode: "test", name: "story key", scopes: Scopes.SCOPES })
          const places = new Placeholders()
          // the webhook examples' receiver: on this machine (private targets are allowed in tests)
          // it refuses the test delivery's attempts (it ends `dead`, which a replay retries) and takes the replay
          const hooks = yield* receiver((_, index) => ({ status: index < Webhooks.MAX_ATTEMPTS ? 500 : 200 }))
          places.see(`${hooks.url}/switchboard`, ApiExamples.WEBHOOK_URL)
          // the contacts' LIDs are random in the fake server: shown as fixed ones
          places.see(alice.lidUser, "100000000000001")
          places.see(bob.lidUser, "100000000000002")
          // the fixture's own ids come first in the story (`usr_..01`, `ws_..01`, `key_..01`)
          places.normalize({ user: user.userId, workspace: user.workspaceId, key: key.id })
          const recorded: Record<string, ApiExamples.ResponseExample> = {}
          for (const [id, requestExample] of ApiExamples.REQUESTS) {
            const { method, op, path } = operations.get(id)!
            // the request as the served document shows it
            const parameters: Array<any> = op.parameters ?? []
            const example = (where: string) =>
              Object.fromEntries(
                parameters.filter((p) => p.in === where && p.example !== undefined).map((p) => [p.name, p.example])
              ) as Record<string, string>
            const body = op.requestBody?.content?.["application/json"]?.example
            const url = path.replace(
              /\{(\w+)\}/g,
              (_: string, name: string) => String(places.realize(example("path")[name]))
            )
            const query = new URLSearchParams(places.realize(example("query")) as Record<string, string>).toString()
            const sessionOnly = op["x-session-only"] === true
            const send = () =>
              request(method.toUpperCase() as "GET", `${url}${query === "" ? "" : `?${query}`}`, {
                ...(op.security?.length
                  ? sessionOnly ? { token: user.accessToken, workspace: user.workspaceId } : { token: key.secret }
                  : {}),
                ...(body === undefined ? {} : { body: places.realize(body) })
              })
            // the e-mail's token, which the example shows as a placeholder
            if (id === "auth.verifyEmail") places.see(yield* mailedToken("grace@example.com"), ApiExamples.VERIFY_TOKEN)
            if (id === "qrPairing.stream") {
              // an event stream, read frame by frame while the phone scans its code: its text is the example
              const streamed = yield* pairOverStream(url, user, places)
              const shown = op.responses["200"]?.content?.["text/event-stream"]?.example
              recorded[id] = { status: streamed.status, text: streamed.text }
              if (WRITE) continue
              assert.strictEqual(streamed.status, 200, `${id}: status`)
              assert.strictEqual(streamed.text, shown, `${id}: answer`)
              continue
            }
            let reply = yield* (requestExample.file !== undefined ? upload(`${url}?${query}`, key.secret) : send())
            const expected = Object.entries<any>(op.responses).find(([, r]) =>
              r.content?.["application/json"]?.example !== undefined
            )
            const wanted = WRITE ? undefined : expected
            const matches = (r: typeof reply) =>
              wanted !== undefined
                ? String(r.status) === wanted[0] &&
                  JSON.stringify(places.normalize(r.body)) ===
                    JSON.stringify(wanted[1].content["application/json"].example)
                : settled[id]?.(r.body) ?? true
            const deadline = Date.now() + 30_000
            while (method === "get" && !matches(reply) && Date.now() < deadline) {
              yield* Effect.sleep("250 millis")
              reply = yield* send()
            }
            const shown: any = reply.body === undefined ? undefined : places.normalize(reply.body)
            // Redis is `disabled` in embedded mode (its stand-ins) and `up` with REDIS_URL: the example shows embedded mode
            if (id === "health.ready" && shown?.checks?.redis?.status === "up") {
              shown.checks.redis = { status: "disabled", latency_ms: null }
            }
            recorded[id] = { status: reply.status, ...(shown === undefined ? {} : { body: shown }) }
            if (WRITE) continue
            const documented = Object.keys(op.responses).filter((s) => s.startsWith("2"))
            assert.include(
              documented,
              String(reply.status),
              `${id}: answered a status its operation documents as success`
            )
            if (shown === undefined) continue
            assert.isDefined(expected, `${id}: a response example`)
            assert.strictEqual(String(reply.status), expected![0], `${id}: status`)
            assert.deepStrictEqual(shown, expected![1].content["application/json"].example, `${id}: answer`)
          }
          if (WRITE) {
            writeExamples(recorded)
          }
        }),
      300_000
    )
  })
})
