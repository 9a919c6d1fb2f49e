/**
 * The tables of `docs/*.md` generated from the code that enforces them, so the documents cannot
 * drift from the behaviour: a block `<!-- generated:NAME -->` ... `<!-- /generated:NAME -->` holds
 * exactly `TABLES[NAME]()`. `node --import tsx scripts/docs-tables.ts` rewrites the blocks;
 * `test/docsTables.test.ts` fails when a committed block differs from what the code says.
 */
import { OpenApi } from "@effect/platform"
import { Api, ApiExamples } from "@switchboard/api"
import {
  ChannelStateMachine,
  EmittedEvents,
  EventCatalogue,
  Events,
  MessageContent,
  MessageStateMachine,
  Pagination,
  Plans,
  QrConnectionError,
  QrWarmUp,
  Webhooks
} from "@switchboard/domain"
import { BodyGuard, HttpConfig, RateLimits } from "@switchboard/service-api"
import { Duration, Schema, SchemaAST } from "effect"
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { RESPONSES } from "../packages/api/src/ApiExampleResponses.js"

const code = (s: string) => `\`${s}\``
const row = (cells: ReadonlyArray<string>) => `| ${cells.join(" | ")} |`
const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) =>
  [row(head), row(head.map(() => "---")), ...rows.map(row)].join("\n")
const seconds = (ms: number) => ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${ms / 1000} s`

const messageTransitions = () =>
  table(
    ["to", "allowed from", "event"],
    MessageStateMachine.MESSAGE_STATUSES.map((to) => [
      code(to),
      MessageStateMachine.ALLOWED_FROM[to].length
        ? MessageStateMachine.ALLOWED_FROM[to].map(code).join(", ")
        : "(nothing moves here)",
      MessageStateMachine.STATUS_EVENT[to] ? code(MessageStateMachine.STATUS_EVENT[to]) : "-"
    ])
  ) + `\n\nTerminal (nothing leaves them): ${MessageStateMachine.TERMINAL_STATUSES.map(code).join(", ")}.`

const CHANNEL_INPUTS: ReadonlyArray<readonly [string, ChannelStateMachine.ChannelInput]> = [
  ["`qr/start`", { _tag: "Start" }],
  ["a runner resumes a stored link", { _tag: "Resume" }],
  ["a QR code is issued", { _tag: "CodeIssued" }],
  ["the link opens", { _tag: "Opened" }],
  ["every QR code expired", { _tag: "CodesExhausted" }],
  ["a pairing code is issued", { _tag: "CodeIssued", pairingCode: true }],
  ["the pairing code expired untyped", { _tag: "CodesExhausted", pairingCode: true }],
  ["WhatsApp refuses the number for a pairing code", { _tag: "PairingCodeRefused" }],
  ["transient close", { _tag: "LinkLost" }],
  ["new owner finds no stored link", { _tag: "Interrupted" }],
  ["reconnect budget spent", { _tag: "GaveUp" }],
  ["logged out on the phone", { _tag: "LoggedOutFromPhone" }],
  ["replaced by another connection", { _tag: "Terminated", reason: "connection_replaced" }],
  ["WhatsApp refuses our client version (405)", { _tag: "Terminated", reason: "client_outdated" }],
  ["WhatsApp restricts the number (463, timelock)", { _tag: "Restriction", reason: "account_restricted" }],
  ["`qr/logout`", { _tag: "Logout" }],
  ["operator suspends", { _tag: "Suspend" }],
  ["operator reactivates (sandbox)", { _tag: "Reactivate", provider: "sandbox" }],
  ["operator reactivates (QR)", { _tag: "Reactivate", provider: "qr" }],
  ["`DELETE /v1/channels/{id}`", { _tag: "Archive" }]
]

const channelTransitions = () =>
  table(
    ["what happened", ...ChannelStateMachine.CHANNEL_STATUSES.map(code)],
    CHANNEL_INPUTS.map(([label, input]) => [
      label,
      ...ChannelStateMachine.CHANNEL_STATUSES.map((status) => {
        const t = ChannelStateMachine.transitionChannel(status, input)
        return t._tag === "Unchanged"
          ? "·"
          : t._tag === "Refused"
          ? `refused (${t.reason})`
          : `${t.to} (${t.reason}${t.requiresRepair ? ", requires repair" : ""})`
      })
    ])
  )

/** `data` members of an event type, `?` marking the optional ones. */
const dataMembers = (schema: Schema.Schema.AnyNoContext) =>
  SchemaAST.getPropertySignatures(Schema.typeSchema(schema).ast).map((p) =>
    code(`${String(p.name)}${p.isOptional ? "?" : ""}`)
  ).join(", ")

const eventCatalogue = () =>
  table(
    ["type", "emitted today", "data members"],
    EventCatalogue.EVENT_TYPES.map((
      { type }
    ) => [code(type), EmittedEvents.isEmitted(type) ? "yes" : "no (reserved)", dataMembers(Events.EVENT_DATA[type])])
  )

const dispatchRetries = () =>
  table(["what", "value"], [
    ["dispatch attempts in all", String(MessageStateMachine.MAX_DISPATCH_ATTEMPTS)],
    ["delay before retry 1, 2, 3", MessageStateMachine.RETRY_DELAYS_MS.map(seconds).join(", ")],
    ["queued and never dispatched: `expired` after", seconds(MessageStateMachine.QUEUED_EXPIRY_MS)],
    [
      "`provider_accepted` and never acknowledged: `failed_permanent` (`provider_ack_timeout`) after",
      `${MessageStateMachine.PROVIDER_ACK_TIMEOUT_MS / 60_000} min`
    ]
  ])

const webhookRetries = () =>
  table(["what", "value"], [
    ["attempts in all", String(Webhooks.MAX_ATTEMPTS)],
    [
      "delay after attempt n (uniform between the two, equal jitter)",
      Array.from(
        { length: Webhooks.MAX_ATTEMPTS - 1 },
        (_, i) => `${Webhooks.retryDelayMs(i + 1, 0, 1) / 1000}-${Webhooks.retryDelayMs(i + 1, 1, 1) / 1000} s`
      ).join(", ")
    ],
    ["attempt timeout", seconds(Webhooks.ATTEMPT_TIMEOUT_MS)],
    ["endpoint disabled after consecutive failures", String(Webhooks.DISABLE_AFTER_FAILURES)],
    ["old secret keeps signing after a rotation", seconds(Webhooks.SECRET_OVERLAP_MS)],
    ["deliveries kept for", `${Webhooks.DELIVERY_RETENTION_MS / 86_400_000} days`]
  ]) + "\n\n" + table(
    ["receiver's answer", "recorded as", "retried"],
    [
      ["2xx", "ok"],
      ["3xx", "redirect"],
      ["429", "rate_limited"],
      ["other 4xx", "client_error"],
      ["5xx", "server_error"]
    ].map((
      [answer, reason]
    ) => [answer!, code(reason!), Webhooks.isRetryable(reason as Webhooks.FailureReason) ? "yes" : "no"])
      .concat(["network_error", "timeout", "blocked_target"].map((reason) => [
        reason === "blocked_target" ? "target resolves to a private address" : reason.replace("_", " "),
        code(reason),
        Webhooks.isRetryable(reason as Webhooks.FailureReason) ? "yes" : "no"
      ]))
  )

const plans = () => {
  const value = (v: unknown) => v === null ? "unlimited" : String(v)
  return table(
    ["entitlement", "free", "starter", "growth", "enterprise", "enforced"],
    Object.entries(Plans.ENTITLEMENTS).map(([name, d]) => [
      code(name),
      value(d.values.free),
      value(d.values.starter),
      value(d.values.growth),
      value(d.values.enterprise),
      d.enforced ? "yes" : "reported only"
    ])
  )
}

const rateLimits = () =>
  table(
    ["rule", "default", "counted per", "setting"],
    Object.entries(RateLimits.DEFAULT_RULES).map(([name, spec]) => [
      code(name),
      `${spec.limit} per ${Duration.format(spec.window)}`,
      spec.scope,
      code(`RATE_LIMIT_${name.toUpperCase()}`)
    ])
  )

const requestLimits = () =>
  table(["what", "limit"], [
    ["request body", `${HttpConfig.DEFAULT_MAX_BODY_BYTES / 1024 / 1024} MiB (${code("MAX_BODY_BYTES")}), 413 beyond`],
    ["contact import body", `${BodyGuard.IMPORT_BODY_BYTES / 1024 / 1024} MiB`],
    ...MessageContent.MEDIA_KINDS.map((kind) => {
      const bytes = MessageContent.MEDIA_LIMIT_BYTES[kind]
      const size = bytes >= 1024 * 1024 ? `${bytes / 1024 / 1024} MiB` : `${bytes / 1024} KiB`
      return [
        `${kind} (upload \`POST /v1/media\`, URL send, inbound file)`,
        `${size}, 413 beyond on upload; ${MessageContent.MEDIA_TYPES[kind]?.join(", ") ?? "any type"}`
      ]
    }),
    ["page size (`limit`)", `1-${Pagination.MAX_LIMIT}, default ${Pagination.DEFAULT_LIMIT}`]
  ])

const qrConnectionErrors = () =>
  table(
    ["reason", "when", "message (for the default address; the code or HTTP status in brackets)"],
    QrConnectionError.QR_CONNECTION_ERROR_REASONS.map((reason) => {
      const hint = QrConnectionError.QR_CONNECTION_ERROR_HINTS[reason]
      return [code(reason), hint.when, `${hint.summary("web.whatsapp.com")} (...). ${hint.check}`]
    })
  )

const warmUp = () =>
  table(["day", ...QrWarmUp.WARM_UP_SCHEDULE.map((_, i) => String(i + 1))], [[
    "new contacts per 24 h",
    ...QrWarmUp.WARM_UP_SCHEDULE.map(String)
  ]])

/**
 * docs/API.md "Examples": each operation's request and response example (packages/api/src/ApiExamples.ts,
 * the ones the OpenAPI document carries and test/apiExamples.test.ts sends to a server), an index
 * table, then one block per operation.
 */
const apiExamples = () => {
  const spec = OpenApi.fromApi(Api.Api) as unknown as {
    paths: Record<string, Record<string, { operationId: string; summary?: string }>>
  }
  const where = new Map<string, { method: string; path: string; summary: string }>()
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      where.set(op.operationId, { method: method.toUpperCase(), path, summary: op.summary ?? "" })
    }
  }
  const responses = RESPONSES
  const index = table(
    ["operation", "", "answer"],
    ApiExamples.REQUESTS.map(([id]) => {
      const w = where.get(id)!
      return [code(`${w.method} ${w.path}`), w.summary, String(responses[id]?.status ?? "")]
    })
  )
  const blocks = ApiExamples.REQUESTS.map(([id, request]) => {
    const w = where.get(id)!
    const path = w.path.replace(/\{(\w+)\}/g, (_, name: string) => request.path?.[name] ?? `{${name}}`)
    const query = new URLSearchParams(request.query ?? {}).toString()
    const response = responses[id]
    return [
      `**${w.summary}** (${code(id)})`,
      "",
      "```http",
      `${w.method} ${path}${query === "" ? "" : `?${query}`}`,
      ...(request.file !== undefined
        ? [`Content-Type: ${request.file.contentType}`, "", request.file.shown]
        : request.body === undefined
        ? []
        : ["Content-Type: application/json", "", JSON.stringify(request.body, null, 2)]),
      "```",
      "",
      ...(response === undefined
        ? []
        : [
          `${response.status}${response.body === undefined && response.text === undefined ? " (no body)" : ""}`,
          ...(response.body === undefined ? [] : ["", "```json", JSON.stringify(response.body, null, 2), "```"]),
          ...(response.text === undefined ? [] : ["", "```text", response.text.trimEnd(), "```"])
        ])
    ].join("\n")
  })
  return [index, ...blocks].join("\n\n")
}

export const TABLES: Record<string, () => string> = {
  "qr-warm-up": warmUp,
  "message-transitions": messageTransitions,
  "channel-transitions": channelTransitions,
  "qr-connection-errors": qrConnectionErrors,
  "event-catalogue": eventCatalogue,
  "dispatch-retries": dispatchRetries,
  "webhook-retries": webhookRetries,
  plans,
  "rate-limits": rateLimits,
  "request-limits": requestLimits,
  "api-examples": apiExamples
}

const BLOCK = /<!-- generated:([a-z-]+) -->\n[\s\S]*?<!-- \/generated:\1 -->/g

/** `markdown` with every generated block filled from the code; throws on an unknown block. */
export const fill = (markdown: string): string =>
  markdown.replace(BLOCK, (_, name: string) => {
    const make = TABLES[name]
    if (make === undefined) throw new Error(`unknown generated block: ${name}`)
    return `<!-- generated:${name} -->\n${make()}\n<!-- /generated:${name} -->`
  })

export const docsDir = join(resolve(dirname(fileURLToPath(import.meta.url)), ".."), "docs")
export const docsFiles = () => readdirSync(docsDir).filter((f) => f.endsWith(".md")).map((f) => join(docsDir, f))

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const file of docsFiles()) writeFileSync(file, fill(readFileSync(file, "utf8")))
}
