/**
 * `GET /metrics` (Prometheus text, `PrometheusText`) on a listener of its own (`MetricsConfig`):
 * unauthenticated, so it is never on the public API's port; off unless `METRICS_PORT` is set.
 * Each scrape takes `Metric.snapshot` of the process's registry, after sampling the process's own
 * figures (CPU, memory). Every process (api node, runner, standalone) composes this layer.
 *
 * A process without an HTTP API of its own (the runner) gives it its probes (`Probes`): then the
 * listener also answers `GET /health` (200 while the process serves) and `GET /ready` (200 when
 * every check passes, 503 otherwise; a JSON body names each check).
 */
import { type ConfigError, Context, Effect, Layer, Metric, Option, Runtime } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as ListenFailure from "./ListenFailure.js"
import * as MetricsConfig from "./MetricsConfig.js"
import * as PrometheusText from "./PrometheusText.js"

export class MetricsServer extends Context.Tag("@switchboard/infra/MetricsServer")<MetricsServer, {
  /** Where `/metrics` is served; `None` when `METRICS_PORT` is unset */
  readonly address: Option.Option<{ readonly host: string; readonly port: number }>
}>() {}

const cpuSeconds = Metric.counter("process_cpu_seconds_total", {
  description: "CPU time (user and system) this process used, in seconds",
  incremental: true
})
const residentMemory = Metric.gauge("process_resident_memory_bytes", {
  description: "Resident memory of this process, in bytes"
})
const heapUsed = Metric.gauge("nodejs_heap_used_bytes", { description: "V8 heap in use, in bytes" })
const startTime = Metric.gauge("process_start_time_seconds", {
  description: "When this process started, in seconds since the Unix epoch"
})

/** One readiness check's answer: `detail` says what was seen (never a secret or personal data). */
export interface Check {
  readonly ok: boolean
  readonly detail: string
}

/** The probes this listener answers besides `/metrics`. */
export class Probes extends Context.Tag("@switchboard/infra/MetricsServer/Probes")<Probes, {
  /** every check by name; the process is ready when all pass */
  readonly ready: Effect.Effect<Readonly<Record<string, Check>>>
}>() {}

/** `/ready`'s answer: its status and JSON body. */
export const readyAnswer = (checks: Readonly<Record<string, Check>>) => {
  const ok = Object.values(checks).every((c) => c.ok)
  return { status: ok ? 200 : 503, body: JSON.stringify({ status: ok ? "ready" : "not_ready", checks }) }
}

/** Samples the process's own figures into the registry. */
const sampleProcess = (() => {
  let lastCpuMicros = 0
  const started = (Date.now() - process.uptime() * 1000) / 1000
  return Effect.suspend(() => {
    const cpu = process.cpuUsage()
    const micros = cpu.user + cpu.system
    const delta = micros - lastCpuMicros
    lastCpuMicros = micros
    const memory = process.memoryUsage()
    return Effect.all([
      Metric.incrementBy(cpuSeconds, delta / 1e6),
      Metric.set(residentMemory, memory.rss),
      Metric.set(heapUsed, memory.heapUsed),
      Metric.set(startTime, started)
    ], { discard: true })
  })
})()

/** The text a scrape answers. */
export const scrape: Effect.Effect<string> = Effect.zipRight(
  sampleProcess,
  Effect.map(Metric.snapshot, PrometheusText.render)
)

/** The listener when `METRICS_PORT` is set; nothing otherwise. */
export const layer: Layer.Layer<MetricsServer, never, MetricsConfig.MetricsConfig> = Layer.scoped(
  MetricsServer,
  Effect.gen(function*() {
    const config = yield* MetricsConfig.MetricsConfig
    if (Option.isNone(config.port)) return { address: Option.none() }
    const port = config.port.value
    const runtime = yield* Effect.runtime<never>()
    const probes = yield* Effect.serviceOption(Probes)
    const server = createServer((request, response) => {
      const path = (request.url ?? "/").split("?")[0]
      if (Option.isSome(probes) && (path === "/health" || path === "/ready")) {
        if (request.method !== "GET" && request.method !== "HEAD") {
          response.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }).end()
          return
        }
        const json = { "content-type": "application/json", "cache-control": "no-store" }
        if (path === "/health") {
          response.writeHead(200, json).end(request.method === "HEAD" ? undefined : JSON.stringify({ status: "ok" }))
          return
        }
        Runtime.runPromise(runtime, probes.value.ready).then(
          (checks) => {
            const answer = readyAnswer(checks)
            response.writeHead(answer.status, json).end(request.method === "HEAD" ? undefined : answer.body)
          },
          () => response.writeHead(503, json).end(JSON.stringify({ status: "not_ready" }))
        )
        return
      }
      if (path !== "/metrics") {
        response.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("Not found: try /metrics\n")
        return
      }
      if (request.method !== "GET" && request.method !== "HEAD") {
        response.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }).end()
        return
      }
      Runtime.runPromise(runtime, scrape).then(
        (text) => {
          response.writeHead(200, { "content-type": PrometheusText.CONTENT_TYPE })
          response.end(request.method === "HEAD" ? undefined : text)
        },
        () => response.writeHead(500).end()
      )
    })
    const address = yield* Effect.acquireRelease(
      Effect.async<AddressInfo, never>((resume) => {
        server.once(
          "error",
          (error) =>
            resume(Option.match(ListenFailure.fromError(error, { name: "metrics", portSetting: "METRICS_PORT" }), {
              // a busy or forbidden port: the one line the process stops with
              onSome: Effect.die,
              onNone: () =>
                Effect.dieMessage(
                  `The metrics listener cannot listen on ${config.host}:${port} (METRICS_HOST, METRICS_PORT): ${error.message}`
                )
            }))
        )
        server.listen(port, config.host, () => resume(Effect.succeed(server.address() as AddressInfo)))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    const shown = address.address.includes(":") ? `[${address.address}]` : address.address
    yield* Effect.logInfo(`metrics are served at http://${shown}:${address.port}/metrics`)
    return { address: Option.some({ host: address.address, port: address.port }) }
  })
)

/**
 * The listener as the environment configures it (`METRICS_PORT`, `METRICS_HOST`): a value that does
 * not parse fails with its `ConfigError`, which the process stops on with one line (`ConfigFailure`).
 * The services read `MetricsConfig.layerFromEnv` first, with their other settings, and use `layer`.
 */
export const layerFromEnv: Layer.Layer<MetricsServer, ConfigError.ConfigError> = layer.pipe(
  Layer.provide(MetricsConfig.layerFromEnv)
)
