/**
 * Opening and closing QR connections leaves nothing behind per socket (docs/QR-CHANNELS.md
 * "Baileys faults we defend"). Baileys 7.0.0-rc14 made an `AsyncLocalStorage` per socket for its
 * key-store transactions; on Node before 24 each one stays registered with async_hooks once used,
 * for the life of the process (Baileys issue 2806). Our patch (patches/baileys+7.0.0-rc14.patch)
 * shares one. Counted, not timed: `v8.queryObjects` counts the instances reachable after a full GC.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { QrAuthStateRepo } from "@switchboard/providers"
import { Effect, Exit, Layer, Logger, Scope } from "effect"
import { AsyncLocalStorage } from "node:async_hooks"
import { execFileSync } from "node:child_process"
import { queryObjects } from "node:v8"
import { FakeWhatsApp } from "../fake-whatsapp/index.js"
import { connect, is, newChannelId, pair } from "./QrHarness.js"

const TestLayer = QrAuthStateRepo.QrAuthStateRepo.Default.pipe(
  Layer.provideMerge(TestDatabase.sqlLayer),
  Layer.provideMerge(Logger.replace(Logger.defaultLogger, Logger.none))
)

/** `AsyncLocalStorage` instances reachable now (after the full GC `queryObjects` does first). */
const reachableStorages = () => queryObjects(AsyncLocalStorage, { format: "count" })

/**
 * Sockets opened and closed: a leak leaves one storage per socket, 4 against the 1 allowed. Each
 * cycle is a login, a decrypt and a close (3-8 s apiece at a full run's load): 12 took 95 s there.
 */
const CYCLES = 4

/**
 * The same count in a Node of its own, for `addTransactionCapability` as Baileys ships it to us,
 * one key store per socket: with the async_hooks implementation of AsyncLocalStorage (Node before
 * 24; on 24 and later the one it still has behind `--no-async-context-frame`), where the leak is.
 */
const script = `
import { AsyncLocalStorage } from "node:async_hooks"
import { queryObjects } from "node:v8"
import { addTransactionCapability } from "baileys"
const logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, child() { return logger } }
const before = queryObjects(AsyncLocalStorage, { format: "count" })
for (let i = 0; i < 50; i++) {
  const keys = addTransactionCapability({ get: async () => ({}), set: async () => {} }, logger,
    { maxCommitRetries: 1, delayBetweenTriesMs: 1 })
  await keys.transaction(async () => {
    await keys.set({ session: { a: new Uint8Array(1) } })
    if (!keys.isInTransaction()) throw new Error("not in its transaction")
  }, "k")
}
console.log(queryObjects(AsyncLocalStorage, { format: "count" }) - before)
`

/** a child Node: the implementation of AsyncLocalStorage is chosen when the process starts */
const asyncHooksFlags = Number(process.versions.node.split(".")[0]) >= 24 ? ["--no-async-context-frame"] : []

describe("QR sockets and AsyncLocalStorage", () => {
  it.effect("Baileys' key stores share one AsyncLocalStorage (50 key stores leave at most one)", () =>
    Effect.sync(() => {
      const out = execFileSync(process.execPath, [...asyncHooksFlags, "--input-type=module", "-e", script], {
        cwd: process.cwd(),
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"]
      })
      assert.isAtMost(Number(out.trim()), 1, out)
    }))

  layer(TestLayer, { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped(
      `${CYCLES} connect/close cycles of a paired connection leave no AsyncLocalStorage behind`,
      () =>
        Effect.gen(function*() {
          const wa = yield* FakeWhatsApp.scoped()
          const channelId = yield* newChannelId
          const first = yield* Scope.make()
          yield* pair(wa, yield* connect(wa, { channelId }).pipe(Scope.extend(first)))
          yield* Scope.close(first, Exit.void)
          const before = reachableStorages()
          for (let i = 0; i < CYCLES; i++) {
            const scope = yield* Scope.make()
            const c = yield* connect(wa, { channelId }).pipe(Scope.extend(scope))
            assert.isTrue(yield* c.connection.resume)
            yield* c.next(is("state", (e) => e.to === "connected"), `connected, cycle ${i}`)
            // a text through the socket's key store (a decrypt is a key-store transaction)
            yield* wa.contact("+4915112349030").says(`cycle ${i}`)
            yield* c.next(is("inbound"), `the text of cycle ${i}`)
            yield* Scope.close(scope, Exit.void)
          }
          const after = reachableStorages()
          // one shared by every socket at most (made the first time Baileys' module ran)
          assert.isAtMost(after - before, 1, `${after - before} AsyncLocalStorage left after ${CYCLES} sockets`)
        }),
      180_000
    )
  })
})
