/** Real service processes for end-to-end tests: spawn, wait until they answer, collect logs, stop. */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { createServer as createNetServer } from "node:net"
import type { AddressInfo } from "node:net"
import { resolve } from "node:path"
import { compileCacheEnv } from "./CompileCache.js"
import { serviceEntry } from "./ServiceBundles.js"

export interface ServiceProcess {
  readonly child: ChildProcess
  readonly baseUrl: string
  /** stdout + stderr so far */
  readonly output: () => string
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code */
  readonly stop: (graceMs?: number) => Promise<number | null>
}

const root = resolve(import.meta.dirname, "..", "..")

/**
 * The `CLUSTER_SECRET` every api node and runner started by `startService` proves to the others
 * (unless `env` names its own): random for each test worker, so the nodes of a test meet on a
 * secret nobody else holds, not on the development default. A cluster client in the test's own
 * process proves it with `ClusterAuthConfig.layer({ secrets: ClusterAuthConfig.secretsOf(clusterSecret) })`.
 */
export const clusterSecret: string = randomBytes(36).toString("base64")

/**
 * Starts `services/<name>/src/main.ts` with `env` on top of a clean environment (and the test's
 * `clusterSecret`): from the bundle this test run built of it (`ServiceBundles.ts`), else through tsx.
 */
export const startService = (
  name: "api" | "runner" | "standalone",
  env: Record<string, string>,
  port: number,
  /** more `--import` modules (test seams loaded before the service, e.g. a slow boot), through tsx */
  preload: ReadonlyArray<string> = []
): ServiceProcess => {
  const seams = preload.length === 0 ? [] : ["tsx", ...preload].flatMap((module) => ["--import", module])
  return startCommand(
    [process.execPath, ...seams, ...serviceEntry(name)],
    { CLUSTER_SECRET: clusterSecret, ...env },
    port
  )
}

/** Runs `command` (program and arguments) from the repository's root, like `startService`. */
export const startCommand = (
  command: ReadonlyArray<string>,
  env: Record<string, string>,
  port: number
): ServiceProcess => {
  const base: Record<string, string> = {}
  for (const k of ["PATH", "HOME", "TMPDIR", "LANG", "NODE_EXTRA_CA_CERTS"]) {
    if (process.env[k]) base[k] = process.env[k]!
  }
  const child = spawn(command[0]!, command.slice(1), {
    cwd: root,
    env: { ...base, ...compileCacheEnv(), HTTP_PORT: String(port), HTTP_HOST: "127.0.0.1", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (d) => (output += d))
  child.stderr!.on("data", (d) => (output += d))
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
  return {
    child,
    baseUrl: `http://127.0.0.1:${port}`,
    output: () => output,
    stop: async (graceMs = 10_000) => {
      if (child.exitCode !== null) return child.exitCode
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs)
      const code = await exited
      clearTimeout(timer)
      return code
    }
  }
}

/**
 * How long a test waits for a stack of service processes to answer `/ready`: a deadline, not a
 * bound (how fast a stack starts is not what these tests assert). Three minutes: a runner on a
 * 2-core machine at load 24 was not ready in 60 s.
 */
export const READY_DEADLINE_MS = 180_000

/**
 * Polls `url` until it answers `status` (default 200) or `timeoutMs` passes. Given the service
 * behind it, gives up as soon as that process exits and puts the end of its output in the error.
 */
export const waitFor = async (
  url: string,
  timeoutMs = 90_000,
  status = 200,
  service?: ServiceProcess
): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  let last = ""
  const fail = (why: string) =>
    new Error(`${url} ${why} (last: ${last})${service ? `\n${service.output().slice(-3000)}` : ""}`)
  while (Date.now() < deadline) {
    if (service && service.child.exitCode !== null) throw fail(`exited ${service.child.exitCode} before answering`)
    try {
      const response = await fetch(url)
      last = `${response.status} ${await response.text()}`
      if (response.status === status) return
    } catch (error) {
      last = String(error)
    }
    await new Promise((r) => setTimeout(r, 250))
  }
  throw fail(`did not answer ${status} within ${timeoutMs} ms`)
}

/** Waits until `service` answers 200 on `path`; see `waitFor`. */
export const waitUntilUp = (service: ServiceProcess, path = "/health", timeoutMs = 90_000) =>
  waitFor(`${service.baseUrl}${path}`, timeoutMs, 200, service)

/** JSON over fetch. */
export const call = async (
  baseUrl: string,
  method: string,
  path: string,
  options: { body?: unknown; token?: string; workspace?: string; headers?: Record<string, string> } = {}
) => {
  const headers: Record<string, string> = { "content-type": "application/json", ...options.headers }
  if (options.token) headers["authorization"] = `Bearer ${options.token}`
  if (options.workspace) headers["x-workspace-id"] = options.workspace
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
  })
  const text = await response.text()
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text), text }
}

/** Runs the operator CLI; its exit code, stdout and stderr, whatever they are. */
export const adminRun = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, [...serviceEntry("admin"), ...args], {
    cwd: root,
    env: { PATH: process.env["PATH"] ?? "", ...compileCacheEnv(), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  let err = ""
  child.stdout!.on("data", (d) => (out += d))
  child.stderr!.on("data", (d) => (err += d))
  const code = await new Promise<number | null>((done) => child.once("exit", done))
  return { code, out, err }
}

/** Runs the operator CLI; returns its parsed JSON output. */
export const admin = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const { code, err, out } = await adminRun(args, env)
  if (code !== 0) throw new Error(`admin ${args.join(" ")} exited ${code}: ${err}`)
  return JSON.parse(out.trim().split("\n").pop()!)
}

/** Runs the operator CLI whatever its exit code: the code, the parsed JSON output (if any) and stderr. */
export const adminExit = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const { code, err, out } = await adminRun(args, env)
  const last = out.trim().split("\n").pop() ?? ""
  return { code, json: last === "" ? undefined : JSON.parse(last), stderr: err }
}

/**
 * A TCP port nobody listens on right now, chosen below the kernel's ephemeral range (32768 and
 * up on Linux): a port from `listen(0)` is free only until the next outgoing connection takes it
 * as its local port, and a test run opens thousands (every Postgres and Redis client), so a child
 * told to listen there could fail with EADDRINUSE before it ever answers.
 */
const handedOut = new Set<number>()
export const freePort = async (): Promise<number> => {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    if (handedOut.has(port)) continue
    handedOut.add(port)
    const free = await new Promise<boolean>((resolve) => {
      const server = createNetServer()
      server.once("error", () => resolve(false))
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error("no free TCP port between 20000 and 32000")
}
