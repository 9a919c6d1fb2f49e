/**
 * The quickstart's receiver (docs/examples/webhook-receiver.mjs) pasted again while the first one
 * still holds the port: it says how to stop that one. The quickstart starts it inside a function
 * run in a subshell, so the user's shell has no job `%1`: the hint is the `kill <pid>` the earlier
 * run printed (README "Quickstart").
 */
import { spawn } from "node:child_process"
import { createServer } from "node:net"
import { resolve } from "node:path"
import { assert, describe, it } from "vitest"

const receiver = resolve(import.meta.dirname, "..", "docs", "examples", "webhook-receiver.mjs")

describe("the quickstart's webhook receiver", () => {
  it(
    "on a port already taken: exits 1 and points to the kill the earlier run printed, not a job of the shell",
    async () => {
      const holder = createServer()
      await new Promise<void>((ok) => holder.listen(0, ok))
      const port = (holder.address() as { port: number }).port
      try {
        const child = spawn(process.execPath, [receiver], {
          env: { ...process.env, WEBHOOK_SECRET: "whsec_test", RECEIVER_PORT: String(port) },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let stderr = ""
        child.stderr.on("data", (chunk) => (stderr += chunk))
        const code = await new Promise<number | null>((ok) => child.on("exit", ok))
        assert.strictEqual(code, 1)
        assert.include(stderr, `port ${port} is taken`)
        assert.include(stderr, "\"kill <pid>\" that run printed")
        assert.notInclude(stderr, "%1", "no job number: the quickstart's receiver is not a job of the user's shell")
      } finally {
        await new Promise((ok) => holder.close(ok))
      }
    },
    30_000
  )
})
