/**
 * Spike server, effect 4 (this directory's node_modules: effect 4.1.0, @effect/platform-node
 * 4.1.0, @effect/sql-pg 4.0.5): the same `HttpApi` as bench/spikes/root/effect3.ts, `GET /health`
 * (no database) and `GET /select` (`SELECT $1` through `@effect/sql-pg`, which in v4 speaks the
 * Postgres protocol itself instead of wrapping `pg`), on `NodeHttpServer`, no logging middleware,
 * a pool of 10. Set `TRACER=off` to disable the tracer (`References.TracerEnabled`). Prints
 * `listening <port>`. Driven by run.ts.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, References, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { createServer } from "node:http"

const url = process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"

const Api = HttpApi.make("spike").add(
  HttpApiGroup.make("spike").add(
    HttpApiEndpoint.get("health", "/health", { success: Schema.Struct({ status: Schema.String }) }),
    HttpApiEndpoint.get("select", "/select", { success: Schema.Struct({ n: Schema.Number }) })
  )
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
  HttpServer.addressFormattedWith((address) =>
    Effect.sync(() => console.log(`listening ${/:(\d+)$/.exec(address)?.[1]}`))
  )
)

const Routes = HttpApiBuilder.layer(Api).pipe(Layer.provide(Handlers))

const Main = Layer.mergeAll(HttpRouter.serve(Routes, { disableLogger: true, disableListenLog: true }), PrintPort).pipe(
  Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 10 })),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env["PORT"] ?? 0), host: "127.0.0.1" })),
  Layer.provide(process.env["TRACER"] === "off" ? Layer.succeed(References.TracerEnabled, false) : Layer.empty)
)

NodeRuntime.runMain(Layer.launch(Main))
