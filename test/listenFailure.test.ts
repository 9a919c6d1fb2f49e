/**
 * A process whose port another process holds stops with ONE line that names the port and what to
 * do, without a stack trace, and a non-zero exit code (`ListenFailure`); so does one given a
 * setting it cannot read, before it creates a database (`ConfigFailure`): the real `npm start`
 * process, started as an operator starts it, on the embedded database.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, type ServiceProcess, startService } from "./support/Processes.js"

const dir = mkdtempSync(join(tmpdir(), "sbt-listen-"))
const held: Array<Server> = []

/** Listens on `port` the way another program would, until the file ends. */
const hold = (port: number) =>
  new Promise<void>((resolve, reject) => {
    const server = createServer()
    held.push(server)
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve())
  })

afterAll(async () => {
  await Promise.all(held.map((server) => new Promise((done) => server.close(done))))
  rmSync(dir, { recursive: true, force: true })
})

/** The exit code of `service` (null if it ran on for 60 s) and its lines logged at ERROR. */
const stopped = async (service: ServiceProcess) => {
  const code = await new Promise<number | null>((done) => {
    const timer = setTimeout(() => {
      service.child.kill("SIGKILL")
      done(null)
    }, 60_000)
    service.child.once("exit", (exitCode) => {
      clearTimeout(timer)
      done(exitCode)
    })
  })
  const output = service.output()
  const errors = output.split("\n").filter((line) => line.includes("\"logLevel\":\"ERROR\""))
  return { code, output, errors }
}

describe("a setting the process cannot read", () => {
  it("stops npm start with one line naming the setting, without its value, before it creates a database", async () => {
    const data = join(dir, "typo")
    const service = startService("standalone", { DATA_DIR: data, LOG_FORMAT: "json", HTTP_PORT: "80a0" }, 0)
    const { code, errors, output } = await stopped(service)
    assert.strictEqual(code, 1, output)
    assert.deepStrictEqual(errors.map((line) => JSON.parse(line).message), [
      "cannot start: HTTP_PORT: Expected a network port value"
    ], output)
    assert.notInclude(output, "80a0", "the value given is not repeated")
    assert.isFalse(existsSync(data), "no database was created")
    assert.notMatch(output, /\n\s+at /, "no stack trace inside a JSON line")
  }, 90_000)

  it(
    "stops npm start the same way for the retention settings, read at start, not by the workers that use them",
    async () => {
      const data = join(dir, "retention")
      const service = startService(
        "standalone",
        {
          DATA_DIR: data,
          LOG_FORMAT: "json",
          EVENT_RETENTION_DAYS: "9x1",
          MEDIA_RETENTION_DAYS: "0",
          MESSAGE_RETENTION_DAYS: "7"
        },
        await freePort()
      )
      const { code, errors, output } = await stopped(service)
      assert.strictEqual(code, 1, output)
      assert.deepStrictEqual(errors.map((line) => JSON.parse(line).message), [
        "cannot start: MEDIA_RETENTION_DAYS: Expected a whole number of days >= 1; " +
        "EVENT_RETENTION_DAYS: Expected a whole number of days >= 90, or nothing to keep events for good; " +
        "MESSAGE_RETENTION_DAYS: Expected a whole number of days >= 30, or nothing to keep messages for good"
      ], output)
      assert.notInclude(output, "9x1", "the value given is not repeated")
      assert.isFalse(existsSync(data), "no database was created")
    },
    90_000
  )

  it("stops npm start the same way for the metrics listener's port", async () => {
    const data = join(dir, "metrics")
    const service = startService(
      "standalone",
      { DATA_DIR: data, LOG_FORMAT: "json", METRICS_PORT: "9o64" },
      await freePort()
    )
    const { code, errors, output } = await stopped(service)
    assert.strictEqual(code, 1, output)
    assert.deepStrictEqual(errors.map((line) => JSON.parse(line).message), [
      "cannot start: METRICS_PORT: Expected a TCP port (0-65535)"
    ], output)
    assert.notInclude(output, "9o64", "the value given is not repeated")
    assert.isFalse(existsSync(data), "no database was created")
  }, 90_000)
})

describe("two settings that collide", () => {
  it(
    "stops npm start when METRICS_PORT is HTTP_PORT, saying the two settings collide, before any database",
    async () => {
      const data = join(dir, "collide")
      const port = await freePort()
      const service = startService(
        "standalone",
        { DATA_DIR: data, LOG_FORMAT: "json", METRICS_PORT: String(port) },
        port
      )
      const { code, errors, output } = await stopped(service)
      assert.strictEqual(code, 1, output)
      assert.deepStrictEqual(errors.map((line) => JSON.parse(line).message), [
        "cannot start: METRICS_PORT: Expected another port than HTTP_PORT's: METRICS_PORT and HTTP_PORT collide " +
        "(the metrics listener and the HTTP API cannot share a port)"
      ], output)
      assert.notInclude(output, "another process")
      assert.isFalse(existsSync(data), "no database was created")
    },
    90_000
  )
})

describe("a port held by another process", () => {
  it("stops npm start with one line naming the port and HTTP_PORT, no stack trace, exit code 1", async () => {
    const port = await freePort()
    await hold(port)
    const service = startService("standalone", { DATA_DIR: join(dir, "data"), LOG_FORMAT: "json" }, port)
    const { code, errors, output } = await stopped(service)
    assert.strictEqual(code, 1, output)
    assert.strictEqual(errors.length, 1, output)
    const message = JSON.parse(errors[0]!).message
    assert.strictEqual(
      message,
      `cannot listen on 127.0.0.1:${port} (HTTP API): the port is in use by another process ` +
        "(set HTTP_PORT to another port, or stop the other process)"
    )
    assert.notMatch(output, /^\s+at /m, "no stack trace")
    assert.notMatch(output, /\\n\s+at /, "no stack trace inside a JSON line")
    assert.notInclude(output, "ServeError")
  }, 90_000)
})
