/**
 * The quickstart's receiver (docs/examples/webhook-receiver.mjs, README "Quickstart"): with
 * `--background` it returns once it listens and names its pid, and when it cannot listen (a receiver
 * of an earlier paste still holds the port) it says why and fails, so the quickstart stops there
 * instead of printing "runs as process N" for a process that already exited.
 */
import { spawn } from "node:child_process"
import { join, resolve } from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { freePort } from "./support/Processes.js"

const root = resolve(import.meta.dirname, "..")
const started: Array<number> = []

/** Runs the receiver with `--background` until that process exits (not until its output closes: the receiver keeps it). */
const background = (port: number) =>
  new Promise<{ readonly status: number | null; readonly stdout: string; readonly stderr: string }>((done) => {
    const child = spawn(process.execPath, [join(root, "docs", "examples", "webhook-receiver.mjs"), "--background"], {
      env: { PATH: process.env.PATH ?? "", WEBHOOK_SECRET: "whsec_test", RECEIVER_PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.once("exit", (status) => setTimeout(() => done({ status, stdout, stderr }), 100))
  })

describe("the quickstart's webhook receiver", () => {
  afterAll(() => {
    for (const pid of started) {
      try {
        process.kill(pid, "SIGTERM")
      } catch {
        // already gone
      }
    }
  })

  it("in the background names the pid of a receiver that listens, and fails on a port already taken", async () => {
    const port = await freePort()
    const first = await background(port)
    const named = /the receiver runs as process (\d+): stop it with kill \1/.exec(first.stdout)
    assert.isNotNull(named, `${first.stdout}${first.stderr}`)
    started.push(Number(named![1]))
    assert.strictEqual(first.status, 0)
    // it listens: an unsigned delivery is refused by it
    assert.strictEqual((await fetch(`http://127.0.0.1:${port}/webhooks`, { method: "POST", body: "{}" })).status, 401)

    const second = await background(port)
    assert.strictEqual(second.status, 1)
    assert.include(second.stderr, `port ${port} is taken`)
    assert.notInclude(second.stdout, "the receiver runs")
  }, 120_000)
})
