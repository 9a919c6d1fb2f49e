/**
 * The send path on effect 4 (a spike, not production): `POST /v1/messages` as an `HttpApi`
 * endpoint with a bearer security middleware (the API key's HMAC looked up once, then cached like
 * `ApiKeyCache`), the payload's schema, the Idempotency-Key claim (its own statement), the checks
 * (one statement), the writes (one statement) and the volatile `Wake` of the channel's entity
 * through the cluster (client only; dispatch4.ts hosts the entity). The statements are the
 * project's (SendSql.ts). Text sends only; no template, media, QR cap, quota or metrics.
 *
 *   DATABASE_URL=... API_KEY_PEPPER=... HTTP_PORT=0 node --import tsx bench/spikes/effect4/send4.ts
 * Prints `listening <port>`.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity
} from "effect/http-api"
import { SqlClient } from "effect/sql"
import { createHash, createHmac, randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { monotonicFactory } from "ulid"
import { Channel } from "./Channel.js"
import * as Cluster from "./Cluster.js"
import * as SendSql from "./SendSql.js"

const env = (name: string, fallback: string) => process.env[name] ?? fallback
const pepper = env("API_KEY_PEPPER", "bench-pepper")

const ErrorBody = Schema.Struct({ code: Schema.String, message: Schema.String })
const apiError = <const Tag extends string>(tag: Tag, status: number) =>
  Schema.TaggedError<{ readonly _tag: Tag; readonly error: typeof ErrorBody.Type }>()(tag, { error: ErrorBody }, {
    httpApiStatus: status
  })
class Unauthorized extends apiError("Unauthorized", 401) {}
class ChannelNotFound extends apiError("ChannelNotFound", 404) {}
class ChannelNotConnected extends apiError("ChannelNotConnected", 409) {}
class IdempotencyConflict extends apiError("IdempotencyConflict", 409) {}
class Invalid extends apiError("ValidationError", 422) {}
class RateLimited extends apiError("ProviderRateLimited", 429) {}

const E164 = Schema.String.check(Schema.isPattern(/^\+[1-9]\d{6,14}$/))
const Category = Schema.Literals(["authentication", "utility", "marketing"])
const SendBody = Schema.Struct({
  to: E164,
  channel_id: Schema.optional(Schema.String.check(Schema.isPattern(/^ch_[0-9A-Za-z]+$/))),
  text: Schema.Struct({ body: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096)) }),
  category: Schema.optional(Category),
  metadata: Schema.optional(Schema.Record(Schema.String, Schema.String))
})
const Message = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("message"),
  workspace_id: Schema.String,
  channel_id: Schema.String,
  conversation_id: Schema.String,
  contact_id: Schema.String,
  direction: Schema.Literal("outbound"),
  from: Schema.NullOr(Schema.String),
  to: Schema.String,
  type: Schema.Literal("text"),
  text: Schema.Struct({ body: Schema.String }),
  template: Schema.Null,
  category: Category,
  status: Schema.Literal("queued"),
  failure: Schema.Null,
  metadata: Schema.Record(Schema.String, Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String,
  sent_at: Schema.Null,
  delivered_at: Schema.Null,
  read_at: Schema.Null
})

class Principal extends Context.Service<Principal, { readonly workspaceId: string; readonly mode: string }>()(
  "spike/Principal"
) {}

class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: Principal }>()(
  "spike/Authentication",
  { security: { bearer: HttpApiSecurity.bearer }, error: Unauthorized }
) {}

const Api = HttpApi.make("spike").add(
  HttpApiGroup.make("messages").add(
    HttpApiEndpoint.post("send", "/v1/messages", {
      payload: SendBody,
      headers: Schema.Struct({ "idempotency-key": Schema.optional(Schema.String.check(Schema.isMaxLength(255))) }),
      success: Message.pipe(HttpApiSchema.status(201)),
      error: [ChannelNotFound, ChannelNotConnected, IdempotencyConflict, Invalid, RateLimited]
    }).middleware(Authentication)
  )
)

const unauthorized = new Unauthorized({ error: { code: "UNAUTHORIZED", message: "Invalid API key" } })

const AuthenticationLive = Layer.effect(Authentication)(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const statements = SendSql.make(sql)
  /** `ApiKeyCache`: a key's row for 10 s per process */
  const cache = new Map<string, { readonly row: { workspace_id: string; mode: string }; readonly until: number }>()
  return {
    bearer: (httpEffect, { credential }) =>
      Effect.gen(function*() {
        const secret = Redacted.value(credential)
        if (!/^wa_(test|live)_[A-Za-z0-9]+$/.test(secret)) return yield* unauthorized
        const hash = createHmac("sha256", pepper).update(secret).digest("hex")
        const now = Date.now()
        let entry = cache.get(hash)
        if (entry === undefined || entry.until <= now) {
          const rows = yield* Effect.orDie(statements.findKey(hash))
          const row = rows[0]
          if (!row || row.revoked_at !== null || row.workspace_status !== "active") return yield* unauthorized
          entry = { row, until: now + 10_000 }
          cache.set(hash, entry)
        }
        return yield* Effect.provideService(httpEffect, Principal, {
          workspaceId: entry.row.workspace_id,
          mode: entry.row.mode
        })
      })
  }
}))

const ulid = monotonicFactory()
const newId = (prefix: string) => `${prefix}_${ulid()}`
const PRIORITY = { authentication: 0, utility: 1, marketing: 2 } as const
const fail = <E>(error: E) => Effect.fail(error)

const Handlers = HttpApiBuilder.group(Api, "messages", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const statements = SendSql.make(sql)
    const channels = yield* Channel.client
    return handlers.handle("send", ({ headers, payload: body }) =>
      Effect.gen(function*() {
        const principal = yield* Principal
        const workspaceId = principal.workspaceId
        const nowMs = Date.now()
        const now = new Date(nowMs).toISOString()
        const key = headers["idempotency-key"] ?? randomUUID()
        const claimId = randomUUID()
        const fingerprint = createHash("sha256").update(JSON.stringify(body)).digest("hex")
        const claimed = yield* statements.begin({
          workspaceId,
          key,
          claimId,
          fingerprint,
          now,
          expiresAt: new Date(nowMs + 24 * 3600_000).toISOString(),
          leaseUntil: new Date(nowMs + 30_000).toISOString()
        })
        if (claimed.length === 0) {
          const row = (yield* statements.existing(workspaceId, key))[0]
          if (row && row.fingerprint === fingerprint && row.state === "done") {
            return Schema.decodeUnknownSync(Message)(row.response)
          }
          return yield* fail(
            new IdempotencyConflict({ error: { code: "IDEMPOTENCY_CONFLICT", message: "Key used by another request" } })
          )
        }
        const release = statements.release(workspaceId, key, claimId).pipe(Effect.orDie)
        return yield* Effect.gen(function*() {
          const facts = (yield* statements.facts({ workspaceId, channelId: body.channel_id, to: body.to, now }))[0]
          if (!facts) {
            return yield* fail(
              new ChannelNotFound({ error: { code: "CHANNEL_NOT_FOUND", message: "No such channel" } })
            )
          }
          if (facts.status !== "connected") {
            return yield* fail(
              new ChannelNotConnected({
                error: { code: "CHANNEL_NOT_CONNECTED", message: `Channel is ${facts.status}` }
              })
            )
          }
          if (facts.provider === "sandbox" && (principal.mode !== "test" || !facts.sandbox_usable)) {
            return yield* fail(
              new ChannelNotConnected({ error: { code: "CHANNEL_NOT_CONNECTED", message: "Sandbox session ended" } })
            )
          }
          if (facts.provider === "sandbox" && !facts.recipient_verified) {
            return yield* fail(new Invalid({ error: { code: "VALIDATION_ERROR", message: "Recipient not verified" } }))
          }
          const mps = facts.capabilities?.max_throughput_mps ?? 0
          if (mps > 0 && Number(facts.queued) >= mps * 24 * 3600) {
            return yield* fail(
              new RateLimited({ error: { code: "PROVIDER_RATE_LIMITED", message: "Backlog over 24 h" } })
            )
          }
          const category = body.category ?? "utility"
          const m: SendSql.SendMessage = {
            id: newId("msg"),
            workspaceId,
            channelId: facts.id,
            conversationId: newId("cnv"),
            contactId: newId("cnt"),
            from: facts.phone_number,
            to: body.to,
            body: body.text.body,
            category,
            priority: PRIORITY[category],
            metadata: body.metadata ?? {},
            now
          }
          const message: typeof Message.Type = {
            id: m.id,
            object: "message",
            workspace_id: workspaceId,
            channel_id: m.channelId,
            conversation_id: m.conversationId,
            contact_id: m.contactId,
            direction: "outbound",
            from: m.from,
            to: m.to,
            type: "text",
            text: { body: m.body },
            template: null,
            category,
            status: "queued",
            failure: null,
            metadata: m.metadata,
            created_at: now,
            updated_at: now,
            sent_at: null,
            delivered_at: null,
            read_at: null
          }
          const events = statements.emitted(m, [newId("evt"), newId("evt"), newId("evt")])
          const response = Schema.encodeSync(Message)(message)
          const row = (yield* statements.write(m, { key, claimId, response }, null, events))[0]!
          if (!row.claimed || row.contact_id === null || row.conversation_id === null) {
            return yield* Effect.die("the send's claim was lost or its contact kept racing")
          }
          // after commit: a lost wake-up only delays dispatch
          yield* channels(m.channelId).Wake({ message_id: m.id }).pipe(Effect.ignoreCause, Effect.forkDetach)
          return { ...message, contact_id: row.contact_id, conversation_id: row.conversation_id }
        }).pipe(Effect.tapError(() => release))
      }).pipe(Effect.catchTag("SqlError", (error) => Effect.die(error))))
  }))

const PrintPort = Layer.effectDiscard(
  HttpServer.addressFormattedWith((address) =>
    Effect.sync(() => console.log(`listening ${/:(\d+)$/.exec(address)?.[1]}`))
  )
)

const Sql = PgClient.layer({
  url: Redacted.make(env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")),
  maxConnections: Number(env("DATABASE_POOL_SIZE", "10"))
})

const Routes = HttpApiBuilder.layer(Api).pipe(Layer.provide(Handlers), Layer.provide(AuthenticationLive))

const Main = Layer.mergeAll(HttpRouter.serve(Routes, { disableLogger: true, disableListenLog: true }), PrintPort).pipe(
  Layer.provide(Cluster.layer({ host: "127.0.0.1", port: undefined })),
  Layer.provide(Sql),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(env("HTTP_PORT", "0")), host: "127.0.0.1" }))
)

NodeRuntime.runMain(Layer.launch(Main))
