/**
 * `GET /metrics` as an operator's Prometheus reads it: the whole app in-process with its metrics
 * listener, a sandbox send and a webhook delivery, then the exposition parsed strictly
 * (support/PrometheusParser.ts) and the series that must have moved compared before and after.
 * The listener is its own: the public port answers 404 there, and without `METRICS_PORT` there
 * is no listener at all.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { ContactsRepo, ConversationsRepo, MessagesRepo } from "@switchboard/db"
import { Ids, Schemas } from "@switchboard/domain"
import { MetricsConfig, MetricsServer } from "@switchboard/infra"
import { Effect, Layer, Option } from "effect"
import { api, createKey, eventually, refused, request, sandboxSetup, waitForMessage } from "./support/Fixtures.js"
import { type Family, parse, samples, total } from "./support/PrometheusParser.js"
import { eventually as eventuallyTrue, receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"

/** The dispatch lag gauges, across channels. */
const LAG = [
  "switchboard_dispatch_lag_p50_seconds",
  "switchboard_dispatch_lag_p90_seconds",
  "switchboard_dispatch_lag_p99_seconds",
  "switchboard_dispatch_lag_max_seconds"
]

/** The metrics listener on a free loopback port (the listener takes the port itself). */
const metricsLayer = MetricsServer.layer.pipe(
  Layer.provide(MetricsConfig.layer({ port: Option.some(0) })),
  Layer.provide(TestApp.quietLogs)
)

const scrapeText = Effect.gen(function*() {
  const server = yield* MetricsServer.MetricsServer
  const address = Option.getOrThrow(server.address)
  return yield* Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${address.port}/metrics`)
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8")
    return response.text()
  })
})

/** A scrape, parsed (a malformed exposition fails the test here). */
const scrape = Effect.map(scrapeText, parse)

const Repos = Layer.mergeAll(
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default
)

describe("GET /metrics", () => {
  layer(Layer.merge(TestApp.layer(), metricsLayer), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("after a sandbox send and a webhook delivery, the series of requests, sends, transitions, deliveries and the pool moved", () =>
      Effect.gen(function*() {
        const sink = yield* receiver()
        const { key, user } = yield* sandboxSetup([TO])
        const admin = yield* createKey(user, { scopes: ["webhooks.manage"] })
        // the typed client decodes the declared 201 only
        yield* (yield* api(admin.secret)).webhooks.create({
          payload: { url: `${sink.url}/hooks`, event_types: ["message.queued", "message.delivered"] }
        })
        const before = yield* scrape

        const client = yield* api(key)
        const sent = yield* client.messages.send({ payload: { to: TO, text: { body: "hi" } }, headers: {} })
        yield* client.messages.get({ path: { messageId: sent.id } })
        yield* waitForMessage(key, sent.id, (m) => m.status === "read", 30_000)
        yield* eventuallyTrue(() => sink.received.length >= 2 || undefined)
        // the receiver answered; the entity records the outcome just after
        const after = yield* eventually(
          scrape,
          (m) => total(m, "switchboard_webhook_deliveries_total", { outcome: "succeeded" }) >= 2,
          20_000
        )
        const moved = (name: string, match: Record<string, string> = {}) =>
          total(after, name, match) - total(before, name, match)

        // HTTP, by route template (never the raw path), method and status
        assert.strictEqual(
          moved("switchboard_http_requests_total", { route: "/v1/messages", method: "POST", status: "201" }),
          1
        )
        assert.isAtLeast(
          moved("switchboard_http_requests_total", { route: "/v1/messages/:messageId", method: "GET", status: "200" }),
          2
        )
        assert.deepStrictEqual(
          samples(after, "switchboard_http_requests_total", { route: `/v1/messages/${sent.id}` }),
          []
        )
        assert.strictEqual(after.get("switchboard_http_request_duration_seconds")?.type, "histogram")
        assert.strictEqual(
          moved("switchboard_http_request_duration_seconds_count", { route: "/v1/messages", method: "POST" }),
          1
        )

        // the send and the message's way to `read`, by provider
        assert.strictEqual(after.get("switchboard_sends_accepted_total")?.type, "counter")
        assert.strictEqual(moved("switchboard_sends_accepted_total", { provider: "sandbox" }), 1)
        for (const status of ["dispatching", "provider_accepted", "sent", "delivered", "read"]) {
          assert.isAtLeast(moved("switchboard_message_transitions_total", { status, provider: "sandbox" }), 1, status)
        }

        // webhook deliveries: both events delivered on the first attempt, latency from the event's creation
        assert.strictEqual(moved("switchboard_webhook_deliveries_total", { outcome: "succeeded", reason: "ok" }), 2)
        assert.strictEqual(moved("switchboard_webhook_delivery_latency_seconds_count", { attempt: "first" }), 2)
        assert.isBelow(moved("switchboard_webhook_delivery_latency_seconds_sum", { attempt: "first" }), 60)

        // the runner side: Channel entities alive, sweeps, the database pool
        assert.isAtLeast(total(after, "effect_cluster_entities", { type: "Channel" }), 1)
        assert.isAbove(total(after, "effect_cluster_shards"), 0)
        assert.isAbove(moved("switchboard_sweeper_runs_total", { sweeper: "messages", result: "ok" }), 0)
        assert.strictEqual(after.get("switchboard_db_pool_connections")?.type, "gauge")
        assert.isAtLeast(total(after, "switchboard_db_pool_max"), 1)
        assert.lengthOf(samples(after, "switchboard_db_pool_connections", { state: "in_use" }), 1)
        assert.lengthOf(samples(after, "switchboard_db_pool_waiting"), 1)
        // the process itself
        assert.isAbove(total(after, "process_resident_memory_bytes"), 0)
        assert.isAbove(total(after, "process_cpu_seconds_total"), 0)
      }))

    it.effect("counts a refused send by its reason, and a 404 under `unmatched`", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const before = yield* scrape
        const client = yield* api(key)
        const unverified = yield* refused(client.messages.send({
          payload: { to: "+4915199999999", text: { body: "not verified" } },
          headers: {}
        }))
        assert.strictEqual(unverified.status, 422)
        const missing = yield* refused(client.messages.send({
          payload: { channel_id: "ch_01JXXXXXXXXXXXXXXXXXXXXXXX", to: TO, text: { body: "x" } },
          headers: {}
        }))
        assert.strictEqual(missing.status, 404)
        // raw: a path no endpoint of the contract has
        assert.strictEqual((yield* request("GET", "/no/such/path/42")).status, 404)
        const after = yield* scrape
        const moved = (name: string, match: Record<string, string>) =>
          total(after, name, match) - total(before, name, match)
        assert.strictEqual(moved("switchboard_sends_refused_total", { reason: "validation_error" }), 1)
        assert.strictEqual(moved("switchboard_sends_refused_total", { reason: "channel_not_found" }), 1)
        assert.strictEqual(moved("switchboard_http_requests_total", { route: "/v1/messages", status: "422" }), 1)
        assert.strictEqual(
          moved("switchboard_http_requests_total", { route: "unmatched", method: "GET", status: "404" }),
          1
        )
        assert.deepStrictEqual(samples(after, "switchboard_http_requests_total", { route: "/no/such/path/42" }), [])
      }))

    it.effect("reports the dispatch lag across channels, as percentile gauges rather than one series per channel", () =>
      Effect.gen(function*() {
        const { session } = yield* sandboxSetup([TO])
        const sql = yield* SqlClient.SqlClient
        const messages = yield* MessagesRepo.MessagesRepo
        const contacts = yield* ContactsRepo.ContactsRepo
        const conversations = yield* ConversationsRepo.ConversationsRepo
        // a message queued two minutes ago, waiting for a retry an hour away: it stays queued
        const now = Date.now()
        const [channel] = yield* sql<{ workspace_id: string }>`SELECT workspace_id FROM channels
          WHERE id = ${session.channel_id}`
        const workspaceId = channel!.workspace_id
        const id = yield* Ids.newId("msg")
        yield* sql.withTransaction(Effect.gen(function*() {
          const contact = yield* contacts.upsertContact(workspaceId, TO, Schemas.toTimestamp(now))
          const conversationId = yield* conversations.upsertConversation(
            workspaceId,
            session.channel_id,
            contact.id,
            Schemas.toTimestamp(now)
          )
          yield* messages.insert({
            id,
            workspaceId,
            channelId: session.channel_id,
            conversationId,
            contactId: contact.id,
            direction: "outbound",
            from: session.phone_number,
            to: TO,
            body: "waiting",
            category: "utility",
            priority: 1,
            status: "queued",
            metadata: {},
            now: Schemas.toTimestamp(now - 120_000)
          })
          yield* sql`UPDATE messages SET next_attempt_at = ${Schemas.toTimestamp(now + 3600_000)} WHERE id = ${id}`
        }))
        // the sweeper samples every 5 s
        const after = yield* eventually(
          scrape,
          (m) => total(m, "switchboard_dispatch_lag_max_seconds") >= 120,
          20_000
        )
        // one gauge per summary across channels, no `quantile` label (reserved for summaries: the
        // strict parser refuses it, as promtool does)
        for (const name of LAG) {
          assert.strictEqual(after.get(name)?.type, "gauge", name)
          assert.deepStrictEqual(samples(after, name).map((s) => s.labels), [{}], name)
        }
        assert.isUndefined(after.get("switchboard_dispatch_lag_seconds"))
        assert.isBelow(total(after, "switchboard_dispatch_lag_max_seconds"), 180)
        assert.isAtLeast(total(after, "switchboard_dispatch_backlogged_channels"), 1)
        assert.isAtLeast(total(after, "switchboard_dispatch_queued_messages"), 1)
        // nothing names a channel
        for (const family of after.values() as Iterable<Family>) {
          for (const s of family.samples) assert.notProperty(s.labels, "channel_id", s.name)
        }
      }).pipe(Effect.provide(Repos)))

    it.effect("is not on the public API: GET /metrics there is 404; its own listener serves only /metrics", () =>
      Effect.gen(function*() {
        // raw: /metrics is no endpoint of the contract
        const publicReply = yield* request("GET", "/metrics")
        assert.strictEqual(publicReply.status, 404)
        assert.strictEqual(publicReply.body.error.code, "NOT_FOUND")
        const server = yield* MetricsServer.MetricsServer
        const { host, port } = Option.getOrThrow(server.address)
        assert.strictEqual(host, "127.0.0.1", "loopback unless METRICS_HOST says otherwise")
        const other = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/v1/messages`))
        assert.strictEqual(other.status, 404)
        const post = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`, { method: "POST" }))
        assert.strictEqual(post.status, 405)
      }))
  })
})

describe("without METRICS_PORT", () => {
  it.scoped("starts no listener", () =>
    Effect.gen(function*() {
      const server = yield* MetricsServer.MetricsServer
      assert.isTrue(Option.isNone(server.address))
    }).pipe(
      Effect.provide(MetricsServer.layer.pipe(Layer.provide(MetricsConfig.layer({ port: Option.none() }))))
    ))
})
