/**
 * README "Quickstart" runs as written: its shell blocks, taken from the README, against a fresh
 * `npm start` on the embedded database (what a new user has), ending with webhooks a receiver
 * verified. Real Postgres is not needed and not used.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { freePort, waitFor } from "./support/Processes.js"

const root = resolve(import.meta.dirname, "..")
const readme = readFileSync(join(root, "README.md"), "utf8")
const section = /<!-- quickstart:start -->([\s\S]*?)<!-- quickstart:end -->/.exec(readme)?.[1] ?? ""
const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)

const dir = mkdtempSync(join(tmpdir(), "sbt-quickstart-"))
const groups: Array<ChildProcess> = []

/** Runs a README block with bash in its own process group; its output so far, and its exit. */
const run = (script: string, env: Record<string, string>, options: { readonly asPasted?: boolean } = {}) => {
  const clean: Record<string, string> = {}
  for (const k of ["PATH", "HOME", "LANG"]) if (process.env[k]) clean[k] = process.env[k]!
  // as pasted: no options of ours, only what the block sets itself
  const child = spawn("bash", ["-c", options.asPasted === true ? script : `set -eo pipefail\n${script}`], {
    cwd: root,
    env: { ...clean, ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"]
  })
  groups.push(child)
  let output = ""
  child.stdout!.on("data", (d) => (output += d))
  child.stderr!.on("data", (d) => (output += d))
  const exited = new Promise<number | null>((done) => child.once("exit", done))
  // the group outlives bash while a background job (the receiver) runs; closed streams say it is gone
  const gone = new Promise<void>((done) => child.stdout!.once("close", () => done()))
  return { output: () => output, exited, gone, pid: child.pid! }
}

const eventually = async (check: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250))
  return check()
}

describe("README quickstart", () => {
  afterAll(async () => {
    for (const child of groups) {
      try {
        process.kill(-child.pid!, "SIGTERM")
      } catch {
        // already gone
      }
    }
    await new Promise((r) => setTimeout(r, 1500))
    rmSync(dir, { recursive: true, force: true })
  }, 30_000)

  it("stops at the first failed call when pasted with the server down, and starts no receiver", async () => {
    const [port, receiverPort] = [await freePort(), await freePort()]
    // nothing listens on `port`: the first call fails
    const rest = run(blocks[2]!, { SB: `http://127.0.0.1:${port}`, RECEIVER_PORT: String(receiverPort) }, {
      asPasted: true
    })
    assert.notStrictEqual(await rest.exited, 0, rest.output())
    await rest.gone
    const out = rest.output()
    assert.lengthOf(out.match(/curl: \(7\)/g) ?? [], 1, out)
    assert.notInclude(out, "\n\n", "curl's error is not followed by an empty line (no answer to print)")
    assert.notInclude(out, "SyntaxError", out)
    assert.notInclude(out, "receiving webhooks", out)
    assert.notInclude(out, "the receiver runs", out)
  }, 60_000)

  it("reaches a verified webhook as written, and again when pasted a second time", async () => {
    assert.strictEqual(blocks.length, 3, "create the user, start, the rest")
    assert.match(blocks[1]!, /^WEBHOOK_ALLOW_PRIVATE_TARGETS=true npm start\n$/)
    assert.strictEqual(readme.match(/admin -- create-user/g)?.length, 1, "one create-user command in the README")
    const [port, receiverPort] = [await freePort(), await freePort()]
    const env = { DATA_DIR: join(dir, "data"), HTTP_PORT: String(port) }

    const create = run(blocks[0]!, env)
    assert.strictEqual(await create.exited, 0, create.output())
    assert.include(create.output(), `"created":true`)
    // npm echoes a script's command line ("> exec node ... --password ..."): the password must not be printed
    assert.notInclude(create.output(), "correct horse battery staple", "the password is not echoed")
    const again = run(blocks[0]!, env)
    assert.strictEqual(await again.exited, 0, again.output())
    assert.include(again.output(), `"created":false`)

    const server = run(blocks[1]!, env)
    await waitFor(`http://127.0.0.1:${port}/ready`, 120_000)

    const paste = async () => {
      const rest = run(blocks[2]!, { SB: `http://localhost:${port}`, RECEIVER_PORT: String(receiverPort) })
      assert.strictEqual(await rest.exited, 0, rest.output())
      const out = rest.output()
      assert.match(out, /^active$/m, "the recipient is verified")
      assert.match(out, /^msg_\w{26} \w+$/m, "the list shows the message")
      assert.match(out, /^queued -> dispatching/m, "the timeline")
      assert.match(out, /^Our menu$/m, "the picture is sent (its caption printed)")
      const received = await eventually(
        () =>
          ["message.sent", "message.delivered", "message.read"].every((t) =>
            rest.output().includes(`verified ${t} evt_`)
          ),
        30_000
      )
      assert.isTrue(
        received,
        `the receiver verified every event:\n${rest.output()}\n--- server\n${server.output().slice(-2000)}`
      )
      assert.notInclude(rest.output(), "refused")
      assert.notMatch(rest.output(), /Error|curl: \(/, "no stack and no failed call")
      return rest
    }
    const first = await paste()
    // "Stop the receiver with the kill it printed" before pasting again: the first paste's receiver goes
    process.kill(-first.pid, "SIGTERM")
    await first.gone
    await paste()
  }, 300_000)
})
