/**
 * The HTTP node as layers: the contract's handlers, the error mapping, docs, and the listener.
 * `layer` needs infrastructure (SqlClient, Redis, Sharding) provided from outside, so the api
 * node, the standalone process and the tests compose the same thing.
 */
import { HttpApiBuilder, HttpApiSwagger, HttpServer, OpenApi } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Api } from "@switchboard/api"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { HealthHandlers } from "./handlers/HealthHandlers.js"
import { HttpConfig } from "./HttpConfig.js"
import { errorMapping, serveMiddleware } from "./HttpMiddlewares.js"
import { Readiness } from "./Readiness.js"
import { ShutdownSignal } from "./ShutdownSignal.js"

const ApiLive = Layer.unwrapEffect(Effect.map(HttpConfig, ({ basePath }) =>
  HttpApiBuilder.api(basePath === "" ? Api : Api.annotate(OpenApi.Servers, [{ url: basePath }]))
)).pipe(
  Layer.provide([HealthHandlers]),
  Layer.provide(Readiness.Default)
)

const DocsLive = Layer.mergeAll(
  HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" }),
  HttpApiSwagger.layer({ path: "/docs" })
)

/** The app served on whatever `HttpServer` is provided. */
export const layer = Layer.unwrapEffect(Effect.map(HttpConfig, (config) =>
  HttpApiBuilder.serve(serveMiddleware(config)).pipe(
    Layer.provide(DocsLive),
    Layer.provide(errorMapping),
    Layer.provide(ApiLive),
    Layer.provide(ShutdownSignal.Default)
  )))

/** The Node listener on `HTTP_HOST:HTTP_PORT`. */
export const listenerLayer = Layer.unwrapEffect(Effect.map(HttpConfig, ({ host, port }) =>
  NodeHttpServer.layer(createServer, { port, host }).pipe(Layer.tap(() => Effect.void))
))

export const serverLayer = layer.pipe(
  HttpServer.withLogAddress,
  Layer.provide(listenerLayer)
)
