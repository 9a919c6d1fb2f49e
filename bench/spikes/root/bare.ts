/**
 * Spike baseline: bare `node:http` + `pg` (the root's `pg`), the same two routes as the effect 3
 * and effect 4 spike servers: `GET /health` and `GET /select` (`SELECT $1::int AS n`, pool of 10).
 * Prints `listening <port>`. Driven by bench/spikes/effect4/run.ts.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import pg from "pg"

const pool = new pg.Pool({
  connectionString: process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres",
  max: 10
})

const json = (res: import("node:http").ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/health") return json(res, 200, { status: "ok" })
  if (req.method === "GET" && req.url === "/select") {
    pool.query<{ n: number }>("SELECT $1::int AS n", [1]).then(
      ({ rows }) => json(res, 200, { n: rows[0]!.n }),
      (error: unknown) => json(res, 500, { error: String(error) })
    )
    return
  }
  json(res, 404, { error: "not found" })
})

server.listen(Number(process.env["PORT"] ?? 0), "127.0.0.1", () => {
  console.log(`listening ${(server.address() as AddressInfo).port}`)
})
process.on("SIGTERM", () => {
  server.close()
  void pool.end()
})
