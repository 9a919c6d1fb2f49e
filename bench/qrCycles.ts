/**
 * QR socket cycles: `--cycles` (default 500) connect/close cycles of a paired QR connection through
 * our connection code (`QrProvider.connect`, `resume`, a text heard, the scope closed), in this
 * process, spread over `--lanes` (default 5) channels, each on a fake WhatsApp server of its own.
 * Every `--every` cycles (default 50): the heap after a forced full GC (`--expose-gc`) and the
 * `AsyncLocalStorage` instances still reachable (`v8.queryObjects`). Baileys 7.0.0-rc14 without our
 * patch left one per socket (docs/QR-CHANNELS.md "Baileys faults we defend").
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
 *     flock /tmp/sb-bench.lock npm run bench:qrcycles -- --cycles 500 --lanes 8
 */
import * as TestDatabase from "@switchboard/db/testing"
import { QrAuthStateRepo } from "@switchboard/providers"
import { Effect, Exit, Layer, Logger, Scope } from "effect"
import { AsyncLocalStorage } from "node:async_hooks"
import { queryObjects } from "node:v8"
import { FakeWhatsApp } from "../test/fake-whatsapp/index.js"
import { connect, is, newChannelId, pair } from "../test/qr/QrHarness.js"
import { numberFlag, record } from "./lib/Measure.js"

const CYCLES = numberFlag("cycles", 500)
const LANES = numberFlag("lanes", 5)
const EVERY = numberFlag("every", 50)

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) {
  console.error("run with node --expose-gc")
  process.exit(2)
}
const mib = (bytes: number) => Math.round(bytes / 2 ** 20 * 10) / 10

const measure = (cycles: number) => {
  gc()
  gc()
  const memory = process.memoryUsage()
  return {
    cycles,
    heap_mib: mib(memory.heapUsed),
    rss_mib: mib(memory.rss),
    async_local_storages: queryObjects(AsyncLocalStorage, { format: "count" })
  }
}

const lane = (index: number, done: { cycles: number; failed: number }, samples: Array<ReturnType<typeof measure>>) =>
  Effect.gen(function*() {
    const wa = yield* FakeWhatsApp.scoped({ phoneNumber: `+1555000${7100 + index}` })
    const channelId = yield* newChannelId
    // pairing too may time out on a loaded machine: again, on a new connection
    for (let paired = false; !paired;) {
      const first = yield* Scope.make()
      paired = yield* connect(wa, { channelId }).pipe(
        Scope.extend(first),
        Effect.flatMap((c) => pair(wa, c)),
        Effect.as(true),
        Effect.catchAllDefect(() => Effect.succeed(false))
      )
      yield* Scope.close(first, Exit.void)
    }
    const contact = wa.contact(`+49151123${40000 + index}`)
    while (done.cycles < CYCLES) {
      // a cycle that times out on a loaded machine is counted and started again
      const ok = yield* Effect.gen(function*() {
        const c = yield* connect(wa, { channelId })
        yield* c.connection.resume
        yield* c.next(is("state", (e) => e.to === "connected"), "connected")
        yield* contact.says(`cycle ${done.cycles}`)
        yield* c.next(is("inbound"), "the text")
      }).pipe(Effect.scoped, Effect.as(true), Effect.catchAllDefect(() => Effect.succeed(false)))
      if (!ok) {
        done.failed++
        continue
      }
      done.cycles++
      if (done.cycles % EVERY === 0) {
        const sample = measure(done.cycles)
        samples.push(sample)
        console.log(`[qrcycles] ${JSON.stringify(sample)}`)
      }
    }
  })

const main = Effect.gen(function*() {
  const started = Date.now()
  const samples = [measure(0)]
  const done = { cycles: 0, failed: 0 }
  yield* Effect.all(Array.from({ length: LANES }, (_, i) => lane(i, done, samples)), { concurrency: "unbounded" })
  const first = samples[0]!
  const last = samples[samples.length - 1]!
  console.log(record("qrcycles", {
    cycles: done.cycles,
    failed_cycles: done.failed,
    lanes: LANES,
    node: process.version,
    seconds: Math.round((Date.now() - started) / 1000),
    heap_growth_mib: Math.round((last.heap_mib - first.heap_mib) * 10) / 10,
    async_local_storages_left: last.async_local_storages - first.async_local_storages,
    samples
  }))
}).pipe(
  Effect.scoped,
  Effect.provide(
    QrAuthStateRepo.QrAuthStateRepo.Default.pipe(
      Layer.provideMerge(TestDatabase.sqlLayer),
      Layer.provideMerge(Logger.replace(Logger.defaultLogger, Logger.none))
    )
  )
)

const url = TestDatabase.testDatabaseUrl()
if (url === undefined) {
  console.error("needs DATABASE_URL (real Postgres)")
  process.exit(2)
}
// the migrated template the test database is cloned from
const made = await TestDatabase.e2eDatabase(url, "qrcycles")
await made.drop()
await Effect.runPromise(main)
process.exit(0)
