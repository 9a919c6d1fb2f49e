/**
 * A TCP proxy between a service and Postgres (`node:net`), to break the database for one test's
 * service without touching the machine's shared server: every other engineer's tests keep theirs.
 *
 * - `outage(ms)`: as a stopped server looks to its clients. Every open connection is reset, and
 *   for `ms` no new one gets through (the listener is closed, so a connect is refused), then the
 *   proxy listens again on the same port.
 * - `drop()`: every open connection reset at once (a crash, `pg_terminate_backend`), new ones fine.
 * - `hold(ms)`: every open and new connection stalls for `ms` (a paused server, a network
 *   partition), then goes on where it stopped: nothing is lost, only late.
 * - `dropOnStatement(pattern)`: the next statement whose text matches is forwarded to the server,
 *   and once the server answers, that answer is swallowed and every connection reset (`only:
 *   "that"`: just the one that ran it): the server ran it (committed, when it ran on its own), the
 *   client never heard (killed mid-write).
 *
 * `url` is the service's `DATABASE_URL`: the target's, with the proxy's host and port.
 */
import { DatabaseConfig } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { connect, createServer, type Server, type Socket } from "node:net"

export interface PgProxy {
  readonly url: string
  readonly port: number
  /** connections made through the proxy so far */
  readonly connections: () => number
  readonly outage: (ms: number) => Promise<void>
  readonly drop: () => void
  readonly hold: (ms: number) => Promise<void>
  /** resolves once a statement matching `pattern` was run by the server and its answer dropped */
  readonly dropOnStatement: (pattern: RegExp, options?: { readonly only?: "that" | "all" }) => Promise<string>
  readonly close: () => Promise<void>
}

interface Pair {
  readonly client: Socket
  readonly server: Socket
  /** a statement is waiting for its answer, then everything is dropped */
  armed: boolean
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The text of the query messages in a chunk the client sent (`Q` simple, `P` parse). */
const statementsIn = (chunk: Buffer): ReadonlyArray<string> => {
  const out: Array<string> = []
  let at = 0
  while (at + 5 <= chunk.length) {
    const tag = String.fromCharCode(chunk[at]!)
    const length = chunk.readInt32BE(at + 1)
    if (length < 4) break
    const body = chunk.subarray(at + 5, Math.min(chunk.length, at + 1 + length))
    if (tag === "Q") out.push(body.toString("utf8"))
    // Parse: statement name \0 query \0 ...
    if (tag === "P") {
      const name = body.indexOf(0)
      const end = body.indexOf(0, name + 1)
      out.push(body.subarray(name + 1, end < 0 ? body.length : end).toString("utf8"))
    }
    at += 1 + length
  }
  return out
}

export const start = async (targetUrl: string): Promise<PgProxy> => {
  const target = new URL(targetUrl)
  const targetHost = target.hostname
  const targetPort = Number(target.port || 5432)
  const pairs = new Set<Pair>()
  let made = 0
  let heldUntil = 0
  let trap:
    | { readonly pattern: RegExp; readonly only: "that" | "all"; readonly done: (statement: string) => void }
    | undefined

  const resetAll = () => {
    for (const pair of pairs) {
      pair.client.resetAndDestroy()
      pair.server.destroy()
    }
    pairs.clear()
  }

  /** Forwards `from` to `to`, stalling while the proxy holds. */
  const pipe = (from: Socket, to: Socket, inspect?: (chunk: Buffer) => void) => {
    from.on("data", (chunk: Buffer) => {
      inspect?.(chunk)
      const wait = heldUntil - Date.now()
      if (wait > 0) {
        from.pause()
        setTimeout(() => {
          if (!to.destroyed) to.write(chunk)
          from.resume()
        }, wait)
      } else if (!to.destroyed) {
        to.write(chunk)
      }
    })
  }

  const onConnection = (client: Socket) => {
    made++
    const server = connect({ host: targetHost, port: targetPort })
    const pair: Pair = { client, server, armed: false }
    pairs.add(pair)
    const end = () => {
      pairs.delete(pair)
      client.destroy()
      server.destroy()
    }
    client.on("error", end).on("close", end)
    server.on("error", end).on("close", end)
    const start = () => {
      pipe(client, server, (chunk) => {
        if (trap === undefined) return
        const hit = statementsIn(chunk).find((s) => trap!.pattern.test(s))
        if (hit === undefined) return
        pair.armed = true
        const { done, only } = trap
        trap = undefined
        // the server's answer to it arrives next: swallowed, and the connections reset
        server.prependOnceListener("data", () => {
          server.pause()
          if (only === "all") {
            resetAll()
          } else {
            pairs.delete(pair)
            client.resetAndDestroy()
            server.destroy()
          }
          done(hit)
        })
      })
      pipe(server, client)
    }
    const wait = heldUntil - Date.now()
    if (wait > 0) setTimeout(start, wait)
    else start()
  }

  let listener: Server = createServer(onConnection)
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      listener.once("error", reject)
      listener.listen(port, "127.0.0.1", () => {
        listener.off("error", reject)
        resolve((listener.address() as { port: number }).port)
      })
    })
  const stopListening = () => new Promise<void>((resolve) => listener.close(() => resolve()))
  const port = await listen(0)
  const url = new URL(targetUrl)
  url.hostname = "127.0.0.1"
  url.port = String(port)

  return {
    url: url.toString(),
    port,
    connections: () => made,
    outage: async (ms) => {
      const closed = stopListening()
      resetAll()
      await closed
      await sleep(ms)
      listener = createServer(onConnection)
      // the same port: the service's URL names it (freed by the close above; retried if the
      // kernel has not let go of it yet)
      for (let attempt = 0;; attempt++) {
        try {
          await listen(port)
          return
        } catch (error) {
          if (attempt >= 50) throw error
          await sleep(100)
        }
      }
    },
    drop: resetAll,
    hold: async (ms) => {
      heldUntil = Date.now() + ms
      await sleep(ms)
    },
    dropOnStatement: (pattern, options) =>
      new Promise<string>((resolve) => {
        trap = { pattern, only: options?.only ?? "all", done: resolve }
      }),
    close: async () => {
      const closed = stopListening()
      resetAll()
      await closed
    }
  }
}

/** The proxy in front of the test file's database (`layer`). */
export class Proxy extends Context.Tag("test/PgProxy")<Proxy, PgProxy>() {}

/**
 * The file's fresh database (`TestDatabase.layer`, real mode only) reached through a proxy: the
 * app's `DatabaseConfig` names the proxy, `Proxy` controls it. Embedded mode has no TCP server to
 * put a proxy in front of: the layer fails, so callers skip without `testDatabaseUrl()`.
 */
export const layer = Layer.unwrapScoped(Effect.gen(function*() {
  const config = yield* DatabaseConfig.DatabaseConfig
  const url = config.url
  if (Option.isNone(url)) return yield* Effect.dieMessage("PgProxy needs a real Postgres (DATABASE_URL)")
  const proxy = yield* Effect.acquireRelease(
    Effect.promise(() => start(Redacted.value(url.value))),
    (p) => Effect.promise(() => p.close())
  )
  return Layer.merge(
    DatabaseConfig.layer({ ...config, url: Option.some(Redacted.make(proxy.url)) }),
    Layer.succeed(Proxy, proxy)
  )
})).pipe(Layer.provide(TestDatabase.layer), Layer.orDie)
