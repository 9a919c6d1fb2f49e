/**
 * Spike server, effect 3 (the root's dependencies, the versions the project uses): an `HttpApi`
 * with `GET /health` (no database) and `GET /select` (`SELECT $1` through `@effect/sql-pg`), on
 * `NodeHttpServer`, no logging middleware, a pool of 10 like the api node's default. Set
 * `TRACER=off` to disable the tracer (`Layer.setTracerEnabled(false)`). Prints `listening <port>`.
 *
 * Lives outside bench/spikes/effect4/: Node resolves the nearest node_modules, which there holds
 * effect 4. Driven by bench/spikes/effect4/run.ts.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, Schema } from "effect"
import { createServer } from "node:http"

const url = process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"

const Api = HttpApi.make("spike").add(
  HttpApiGroup.make("spike")
    .add(HttpApiEndpoint.get("health", "/health").addSuccess(Schema.Struct({ status: Schema.String })))
    .add(HttpApiEndpoint.get("select", "/select").addSuccess(Schema.Struct({ n: Schema.Number })))
)

const Handlers = HttpApiBuilder.group(Api, "spike", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return handlers
      .handle("health", () => Effect.succeed({ status: "ok" }))
      .handle("select", () =>
        sql<{ n: number }>`SELECT ${1}::int AS n`.pipe(
          Effect.map((rows) => ({ n: rows[0]!.n })),
          Effect.orDie
        ))
  }))

/** The runner reads the port from this line */
const PrintPort = Layer.effectDiscard(
  HttpServer.addressWith((address) =>
    Effect.sync(() => console.log(`listening ${address._tag === "TcpAddress" ? address.port : address.path}`))
  )
)

const Main = Layer.mergeAll(HttpApiBuilder.serve(), PrintPort).pipe(
  Layer.provide(HttpApiBuilder.api(Api)),
  Layer.provide(Handlers),
  Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 10 })),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env["PORT"] ?? 0), host: "127.0.0.1" })),
  Layer.provide(process.env["TRACER"] === "off" ? Layer.setTracerEnabled(false) : Layer.empty)
)

NodeRuntime.runMain(Layer.launch(Main), { disablePrettyLogger: true })
