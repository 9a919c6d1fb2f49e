/** Real service processes for end-to-end tests: spawn, wait until they answer, collect logs, stop. */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer as createNetServer } from "node:net"
import type { AddressInfo } from "node:net"
import { resolve } from "node:path"

export interface ServiceProcess {
  readonly child: ChildProcess
  readonly baseUrl: string
  /** stdout + stderr so far */
  readonly output: () => string
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code */
  readonly stop: (graceMs?: number) => Promise<number | null>
}

const root = resolve(import.meta.dirname, "..", "..")

/** Starts `services/<name>/src/main.ts` with `env` on top of a clean environment. */
export const startService = (
  name: "api" | "runner" | "standalone",
  env: Record<string, string>,
  port: number
): ServiceProcess => {
  const base: Record<string, string> = {}
  for (const k of ["PATH", "HOME", "TMPDIR", "LANG"]) if (process.env[k]) base[k] = process.env[k]!
  const child = spawn(process.execPath, ["--import", "tsx", `services/${name}/src/main.ts`], {
    cwd: root,
    env: { ...base, HTTP_PORT: String(port), HTTP_HOST: "127.0.0.1", ...env },
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

/** Polls `url` until it answers `status` (default 200) or `timeoutMs` passes. */
export const waitFor = async (url: string, timeoutMs = 90_000, status = 200): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  let last = ""
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url)
      last = `${response.status} ${await response.text()}`
      if (response.status === status) return
    } catch (error) {
      last = String(error)
    }
    await new Promise((r) => setTimeout(r, 250))
  }
  throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms (last: ${last})`)
}

/** JSON over fetch. */
export const call = async (
  baseUrl: string,
  method: string,
  path: string,
  options: { body?: unknown; token?: string; workspace?: string } = {}
) => {
  const headers: Record<string, string> = { "content-type": "application/json" }
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

/** Runs the operator CLI; returns its parsed JSON output. */
export const admin = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", "services/admin/src/main.ts", ...args], {
    cwd: root,
    env: { PATH: process.env["PATH"] ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  let err = ""
  child.stdout!.on("data", (d) => (out += d))
  child.stderr!.on("data", (d) => (err += d))
  const code = await new Promise<number | null>((done) => child.once("exit", done))
  if (code !== 0) throw new Error(`admin ${args.join(" ")} exited ${code}: ${err}`)
  return JSON.parse(out.trim().split("\n").pop()!)
}

/** A TCP port nobody listens on right now (e2e tests must not collide with other runs). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createNetServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      server.close(() => resolve(port))
    })
  })
