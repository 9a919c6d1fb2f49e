/**
 * The HTTP node as layers: the contract's handlers, the error mapping, docs, and the listener.
 * `layer` needs infrastructure (SqlClient, Redis, Sharding) and its configuration (HttpConfig,
 * IdentityConfig, Mailer) provided from outside, so the api
 * node, the standalone process and the tests compose the same thing.
 */
import { HttpApiBuilder, HttpApiSwagger, HttpMiddleware, HttpServer, OpenApi } from "@effect/platform"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { Api } from "@switchboard/api"
import { SessionsRepo, UsersRepo } from "@switchboard/db"
import { ListenFailure } from "@switchboard/infra"
import { Duration, Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AuthenticationLive } from "./AuthenticationLive.js"
import * as ClientErrors from "./ClientErrors.js"
import { ConsoleLive } from "./Console.js"
import { errorMapping } from "./ErrorMapping.js"
import { ApiKeysHandlers } from "./handlers/ApiKeysHandlers.js"
import { AuthHandlers } from "./handlers/AuthHandlers.js"
import { ChannelsHandlers } from "./handlers/ChannelsHandlers.js"
import { ContactGroupsHandlers } from "./handlers/ContactGroupsHandlers.js"
import { ContactImportsHandlers } from "./handlers/ContactImportsHandlers.js"
import { ContactsHandlers } from "./handlers/ContactsHandlers.js"
import { ConversationsHandlers } from "./handlers/ConversationsHandlers.js"
import { GroupChatsHandlers } from "./handlers/GroupChatsHandlers.js"
import { HealthHandlers } from "./handlers/HealthHandlers.js"
import { MediaHandlers } from "./handlers/MediaHandlers.js"
import { MessagesHandlers } from "./handlers/MessagingHandlers.js"
import { PlanHandlers } from "./handlers/PlanHandlers.js"
import { QrPairingHandlers } from "./handlers/QrPairingHandlers.js"
import { SandboxHandlers } from "./handlers/SandboxHandlers.js"
import { SessionHandlers } from "./handlers/SessionHandlers.js"
import { TemplatesHandlers } from "./handlers/TemplatesHandlers.js"
import { WebhooksHandlers } from "./handlers/WebhooksHandlers.js"
import { HttpConfig } from "./HttpConfig.js"
import { IpRateLimitLive } from "./IpRateLimitLive.js"
import * as PublicUrl from "./PublicUrl.js"
import { Readiness } from "./Readiness.js"
import { serveMiddleware } from "./ServeMiddleware.js"
import { Accounts } from "./services/Accounts.js"
import { ApiKeys } from "./services/ApiKeys.js"
import { Channels } from "./services/Channels.js"
import { ContactGroups } from "./services/ContactGroups.js"
import { ContactImports } from "./services/ContactImports.js"
import { Contacts } from "./services/Contacts.js"
import { Conversations } from "./services/Conversations.js"
import { Credentials } from "./services/Credentials.js"
import { Entitlements } from "./services/Entitlements.js"
import { GroupChats } from "./services/GroupChats.js"
import { MediaFiles } from "./services/MediaFiles.js"
import { Messages } from "./services/Messages.js"
import { QrPairing } from "./services/QrPairing.js"
import { RateLimits } from "./services/RateLimits.js"
import { Sandbox } from "./services/Sandbox.js"
import { SandboxGroupChats } from "./services/SandboxGroupChats.js"
import { Templates } from "./services/Templates.js"
import { UsageReport } from "./services/UsageReport.js"
import { Webhooks } from "./services/Webhooks.js"
import { ShutdownSignal } from "./ShutdownSignal.js"

const ApiLive = Layer.unwrapEffect(
  Effect.map(
    HttpConfig,
    ({ basePath }) =>
      HttpApiBuilder.api(basePath === "" ? Api.Api : Api.Api.annotate(OpenApi.Servers, [{ url: basePath }]))
  )
).pipe(
  Layer.provide([
    HealthHandlers,
    AuthHandlers,
    SessionHandlers,
    ApiKeysHandlers,
    PlanHandlers,
    MessagesHandlers,
    MediaHandlers,
    ConversationsHandlers,
    ChannelsHandlers,
    QrPairingHandlers,
    SandboxHandlers,
    ContactsHandlers,
    ContactGroupsHandlers,
    GroupChatsHandlers,
    ContactImportsHandlers,
    TemplatesHandlers,
    WebhooksHandlers
  ]),
  Layer.provide([AuthenticationLive, IpRateLimitLive]),
  Layer.provide(
    Layer.mergeAll(
      Readiness.Default,
      Accounts.Default,
      ApiKeys.Default,
      Entitlements.Default,
      UsageReport.Default,
      RateLimits.Default,
      Messages.Default,
      MediaFiles.Default,
      Conversations.Default,
      Channels.Default,
      Contacts.Default,
      ContactGroups.Default,
      GroupChats.Default,
      ContactImports.Default,
      QrPairing.Default,
      Sandbox.Default,
      SandboxGroupChats.Default,
      Templates.Default,
      Webhooks.Default,
      Credentials.Default,
      SessionsRepo.SessionsRepo.Default,
      UsersRepo.UsersRepo.Default
    )
  )
)

const DocsLive = Layer.mergeAll(
  HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" }),
  HttpApiSwagger.layer({ path: "/docs" }),
  ConsoleLive
)

/**
 * The app served on whatever `HttpServer` is provided. The platform's own request span stays off
 * (it records every header and the query string); ours is in `HttpTracing`, only when tracing is
 * on.
 */
export const layer = Layer.unwrapEffect(
  Effect.map(HttpConfig, (config) =>
    HttpApiBuilder.serve(serveMiddleware(config)).pipe(
      HttpMiddleware.withTracerDisabledWhen(() => true),
      Layer.provide(DocsLive),
      Layer.provide(errorMapping),
      Layer.provide(ApiLive),
      Layer.provide(ShutdownSignal.Default)
    ))
)

/**
 * The Node server with deliberate timeouts (docs/CONFIGURATION.md "Configuration"): a client that sends its
 * headers or its request too slowly is answered 408 and cut off, other connections unaffected.
 * Node checks these timeouts every `connectionsCheckingInterval`, so that follows the shortest.
 * Node's own parser errors (unknown method, malformed request line, `Transfer-Encoding` with
 * `Content-Length`), a missing `Host`, an unknown `Expect` and `CONNECT` answer in the error
 * envelope too (`ClientErrors`).
 */
export const makeNodeServer =
  (config: Pick<HttpConfig["Type"], "headersTimeout" | "requestTimeout" | "keepAliveTimeout">) => () => {
    const requestTimeout = Duration.toMillis(config.requestTimeout)
    const headersTimeout = Math.min(Duration.toMillis(config.headersTimeout), requestTimeout)
    const server = createServer({
      headersTimeout,
      requestTimeout,
      keepAliveTimeout: Duration.toMillis(config.keepAliveTimeout),
      connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(headersTimeout / 4))),
      // answered by the app, in the envelope (`ClientErrors.lacksHost`), not by Node without a body
      requireHostHeader: false
    })
    server.on("clientError", ClientErrors.answer)
    server.on("checkExpectation", ClientErrors.expectationFailed)
    server.on("connect", ClientErrors.refuseConnect)
    return server
  }

/**
 * The Node listener on `HTTP_HOST:HTTP_PORT`. A busy or forbidden port fails as a `ListenFailure`,
 * the one line the process stops with.
 */
export const listenerLayer = Layer.unwrapEffect(
  Effect.map(
    HttpConfig,
    (config) =>
      NodeHttpServer.layer(makeNodeServer(config), { port: config.port, host: config.host }).pipe(
        Layer.mapError(ListenFailure.refine({ name: "HTTP API", portSetting: "HTTP_PORT" }))
      )
  )
)

/** The same server on a random loopback port, with an `HttpClient` pointed at it (tests). */
export const listenerLayerTest = HttpServer.layerTestClient.pipe(
  Layer.provide(NodeHttpClient.layerWithoutAgent),
  Layer.provide(NodeHttpClient.makeAgentLayer({ keepAlive: false })),
  Layer.provideMerge(Layer.unwrapEffect(
    Effect.map(HttpConfig, (config) => NodeHttpServer.layer(makeNodeServer(config), { port: 0 }))
  ))
)

/**
 * One line once the server listens, with the addresses a person opens, and one when it stops.
 * A wildcard listener (0.0.0.0, ::) is shown as localhost (`PublicUrl`).
 */
const announce = Layer.scopedDiscard(Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  const { basePath } = yield* HttpConfig
  // where this process listens (not `PUBLIC_URL`: the operator reads where to reach it locally)
  const base = PublicUrl.of({ publicUrl: undefined, address: server.address, basePath })
  yield* Effect.logInfo(
    `Switchboard is listening: API ${base}, docs ${base}/docs, console ${base}/console, OpenAPI ${base}/openapi.json`
  )
  yield* Effect.addFinalizer(() => Effect.logInfo("Switchboard is stopping: finishing in-flight requests"))
}))

export const serverLayer = layer.pipe(
  Layer.merge(announce),
  Layer.provide(listenerLayer)
)
