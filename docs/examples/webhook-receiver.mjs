// A webhook receiver for trying Switchboard out (README "Quickstart"): verifies each delivery's
// signature with WEBHOOK_SECRET (docs/WEBHOOKS.md "Webhooks") and prints one line per event.
//   WEBHOOK_SECRET=whsec_... RECEIVER_PORT=4000 node docs/examples/webhook-receiver.mjs
import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"

const secret = process.env.WEBHOOK_SECRET
const port = Number(process.env.RECEIVER_PORT ?? 4000)
if (!secret) {
  console.error("set WEBHOOK_SECRET to the endpoint's secret (whsec_...)")
  process.exit(64)
}

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
  .listen(port, () => console.log(`receiving webhooks on http://localhost:${port}/webhooks`))
