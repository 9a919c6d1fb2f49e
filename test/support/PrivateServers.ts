/**
 * Private Postgres and Redis servers for chaos tests and benchmarks: each on its own port and
 * directory, so stopping one hurts nobody else using the machine's shared instances. Postgres
 * comes from the Debian packages (`/usr/lib/postgresql/<version>/bin`); as root (CI), its commands
 * run as the `postgres` user, since `initdb` refuses root.
 */
import { execFile, spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { freePort } from "./Processes.js"

const run = promisify(execFile)

const postgresBin = () => {
  const root = "/usr/lib/postgresql"
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  const version = versions.find((v) => existsSync(join(root, v, "bin", "initdb")))
  if (version === undefined) throw new Error("no Postgres server binaries under /usr/lib/postgresql")
  return join(root, version, "bin")
}

const isRoot = () => process.getuid?.() === 0

/** Runs a Postgres binary, as the `postgres` user when we are root. */
const pgCommand = (bin: string, args: ReadonlyArray<string>) =>
  isRoot() ? run("runuser", ["-u", "postgres", "--", bin, ...args]) : run(bin, [...args])

export interface PrivatePostgres {
  readonly port: number
  /** the `postgres` database, trust authentication */
  readonly url: string
  /** an outage: every connection is cut at once (`pg_ctl stop -m immediate`, like a crash) */
  readonly stop: () => Promise<void>
  /** back on the same port (crash recovery first) */
  readonly start: () => Promise<void>
  /** stops it and removes its directory */
  readonly destroy: () => Promise<void>
}

export const startPostgres = async (): Promise<PrivatePostgres> => {
  const bin = postgresBin()
  const dir = mkdtempSync(join(tmpdir(), "sb-pg-"))
  if (isRoot()) {
    const { stdout } = await run("id", ["-u", "postgres"])
    const { stdout: gid } = await run("id", ["-g", "postgres"])
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()))
  }
  const data = join(dir, "data")
  await pgCommand(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
  const port = await freePort()
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    // fsync off is safe here: the outages are process crashes (`-m immediate`), never a machine's,
    // so what reached the OS survives. synchronous_commit must stay on (Postgres' default, as in
    // production): off, a commit is answered before its WAL leaves shared memory, and an immediate
    // stop loses it — the service would have answered 201 for a message the crash then erased.
    "-c fsync=off",
    "-c full_page_writes=off",
    "-c max_connections=200"
  ].join(" ")
  const start = async () => {
    await pgCommand(join(bin, "pg_ctl"), ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "-t", "60", "start"])
  }
  const stop = async () => {
    await pgCommand(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"])
  }
  await start()
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop,
    start,
    destroy: async () => {
      await stop().catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

export interface PrivateRedis {
  readonly port: number
  readonly url: string
  /** an outage: SIGKILL, nothing saved */
  readonly stop: () => Promise<void>
  /** back on the same port, empty */
  readonly start: () => Promise<void>
  readonly destroy: () => Promise<void>
}

export const startRedis = async (): Promise<PrivateRedis> => {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async () => {
    const server = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: ["ignore", "pipe", "pipe"] }
    )
    child = server
    await new Promise<void>((resolve, reject) => {
      let output = ""
      const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output}`)), 10_000)
      server.stdout!.on("data", (d) => {
        output += d
        if (output.includes("Ready to accept connections")) {
          clearTimeout(timer)
          resolve()
        }
      })
      server.once("exit", (code) => reject(new Error(`redis-server exited ${code}: ${output}`)))
    })
  }
  const stop = async () => {
    const server = child
    if (server === undefined || server.exitCode !== null) return
    const exited = new Promise((r) => server.once("exit", r))
    server.kill("SIGKILL")
    await exited
  }
  await start()
  return { port, url: `redis://127.0.0.1:${port}`, stop, start, destroy: stop }
}
