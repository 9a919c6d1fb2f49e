// A webhook receiver for trying Switchboard out (README "Quickstart"): verifies each delivery's
// signature with WEBHOOK_SECRET (docs/WEBHOOKS.md "Webhooks") and prints one line per event.
//   WEBHOOK_SECRET=whsec_... RECEIVER_PORT=4000 node docs/examples/webhook-receiver.mjs
// With `--background` it runs as a process of its own and returns once that process listens,
// printing its pid (the `kill` that stops it); when it cannot listen, it says why and exits 1.
import { spawn } from "node:child_process"
import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { fileURLToPath } from "node:url"

const secret = process.env.WEBHOOK_SECRET
const port = Number(process.env.RECEIVER_PORT ?? 4000)
if (!secret) {
  console.error("set WEBHOOK_SECRET to the endpoint's secret (whsec_...)")
  process.exit(64)
}

if (process.argv.includes("--background")) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  child.once("message", () => {
    console.log(`the receiver runs as process ${child.pid}: stop it with kill ${child.pid}`)
    child.disconnect()
    child.unref()
    process.exit(0)
  })
  child.once("exit", (code) => process.exit(code || 1))
} else receive()

const verify = (rawBody, headers) => {
  const timestamp = headers["x-webhook-timestamp"]
  const signatures = headers["x-webhook-signature"]
  if (!timestamp || !signatures || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false
  const expected = createHmac("sha256", secret).update(`${timestamp}.`).update(rawBody).digest()
  return signatures.split(",").some((entry) => {
    const given = Buffer.from(entry.trim().replace(/^v1=/, ""), "hex")
    return entry.trim().startsWith("v1=") && given.length === expected.length && timingSafeEqual(given, expected)
  })
}

function receive() {
  const seen = new Set()
  createServer((req, res) => {
    const chunks = []
    req.on("data", (c) => chunks.push(c)).on("end", () => {
      const raw = Buffer.concat(chunks)
      if (!verify(raw, req.headers)) {
        console.log("refused: bad or stale signature")
        res.writeHead(401).end()
        return
      }
      const id = req.headers["x-webhook-event-id"]
      // retries and replays carry the same event id: handle each event once
      if (!seen.has(id)) {
        seen.add(id)
        const event = JSON.parse(raw.toString("utf8"))
        console.log(`verified ${event.type} ${id}`)
      }
      res.writeHead(200).end()
    })
  })
    .on("error", (error) => {
      // a receiver from an earlier run still holds the port, with that run's secret
      console.error(
        error.code === "EADDRINUSE"
          ? `port ${port} is taken (a receiver from an earlier run? stop it with the "kill <pid>" that run printed, or set RECEIVER_PORT)`
          : error.message
      )
      process.exit(1)
    })
    .listen(port, () => {
      console.log(`receiving webhooks on http://localhost:${port}/webhooks`)
      process.send?.("listening")
    })
}
