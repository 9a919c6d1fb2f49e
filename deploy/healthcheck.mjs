// The image's HEALTHCHECK (Dockerfile): an api node or a standalone process is healthy when
// `GET /ready` answers 200 (database, Redis and cluster up); a runner serves no HTTP, so it is
// healthy while its cluster port (`PORT`, default 34431) accepts connections. The probe closes
// without the cluster handshake (docs/CONFIGURATION.md "The cluster port"): the runner counts
// that as a port probe and logs it at debug level only.
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

if (role === "runner") {
  const socket = connect(Number(process.env.PORT ?? 34431), "127.0.0.1", () => {
    socket.end()
    process.exit(0)
  })
  socket.on("error", fail)
} else {
  const base = process.env.BASE_PATH ?? ""
  fetch(`http://127.0.0.1:${process.env.HTTP_PORT ?? 3000}${base}/ready`).then((r) => process.exit(r.ok ? 0 : 1), fail)
}
