// The image's HEALTHCHECK (Dockerfile): an api node or a standalone process is healthy when
// `GET /ready` answers 200 (database, Redis and cluster up). A runner is healthy when `GET /ready`
// of its metrics listener answers 200 (`METRICS_PORT`: database, shard locks held and refreshed,
// no provider input waiting too long; docs/OPERATING.md "Health of a runner"); without a metrics
// listener, while its cluster port (`PORT`, default 34431) accepts connections. That probe closes
// without the cluster handshake (docs/CONFIGURATION.md "The cluster port"): the runner counts it
// as a port probe and logs it at debug level only.
import { readFileSync } from "node:fs"
import { connect } from "node:net"

const role = (() => {
  try {
    return readFileSync(`${process.env.TMPDIR ?? "/tmp"}/switchboard-role`, "utf8").trim()
  } catch {
    return "unknown"
  }
})()
const fail = () => process.exit(1)
setTimeout(fail, 4000).unref()

const metricsPort = (process.env.METRICS_PORT ?? "").trim()
if (role === "runner" && metricsPort !== "") {
  const bound = (process.env.METRICS_HOST ?? "").trim()
  const host = bound === "" || bound === "0.0.0.0" || bound === "::" ? "127.0.0.1" : bound
  const shown = host.includes(":") ? `[${host}]` : host
  fetch(`http://${shown}:${metricsPort}/ready`).then((r) => process.exit(r.ok ? 0 : 1), fail)
} else if (role === "runner") {
  // where the runner listens: its own address (`LISTEN_HOST`, else `HOST`, the cluster's default
  // `localhost`), not the loopback address, which it does not listen on when `HOST` names it
  const host = process.env.LISTEN_HOST || process.env.HOST || "localhost"
  const socket = connect(Number(process.env.PORT ?? 34431), host, () => {
    socket.end()
    process.exit(0)
  })
  socket.on("error", fail)
} else {
  const base = process.env.BASE_PATH ?? ""
  fetch(`http://127.0.0.1:${process.env.HTTP_PORT ?? 3000}${base}/ready`).then((r) => process.exit(r.ok ? 0 : 1), fail)
}
