/**
 * At most two end-to-end files (`*.e2e.test.ts`) run at once, and the most timing-bound one alone
 * (`ALONE`). Their pool has two workers (`vitest.config.ts`), so only `ALONE` and the file it waits
 * for ever wait here; the slots keep the bound if the pools change. Each starts two to six service
 * processes and times what they do: with three of them at once on a 2-core machine, a runner
 * scaled out under load took 11.2 s to dispatch a message that must go out within 8 s
 * (`test/scaleRunners.e2e.test.ts`, a CI run of 2026-11-27). A slot is a Postgres advisory lock held
 * on a connection of the file's own for as long as the file runs; a worker that dies frees it with
 * its connection. Real mode only: the end-to-end files are skipped without a Postgres.
 */
import { testDatabaseUrl } from "@switchboard/db/testing"
import pg from "pg"
import { afterAll, beforeAll, expect } from "vitest"
import { isEndToEnd } from "./EndToEnd.js"

const SLOTS = 2
/** Names the advisory locks (their first key); the slot is the second. */
const LOCK_KEY = 0x5e2e
/**
 * Files that take every slot and run with no other end-to-end file: the runners scaled out under
 * load (beside another end-to-end file a CI run saw a dispatch wait 8.5 s, 2026-11-27). Its waits
 * and handover seconds are printed figures now and its assertions read Postgres' record of the lock
 * rows (no wall-clock bound), so alone it keeps its figures comparable from run to run.
 */
const ALONE = [/scaleRunners\.e2e\.test\.ts$/]

const url = testDatabaseUrl()
const testPath = expect.getState().testPath

if (url !== undefined && testPath !== undefined && isEndToEnd(testPath)) {
  let holder: pg.Client | undefined

  beforeAll(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    if (ALONE.some((pattern) => pattern.test(testPath))) {
      // waits in Postgres' queue for each slot in turn: a file in the queue keeps the others from
      // taking the slot it waits for, so it is not passed over
      for (let slot = 0; slot < SLOTS; slot++) await client.query("SELECT pg_advisory_lock($1, $2)", [LOCK_KEY, slot])
      holder = client
      return
    }
    for (;;) {
      for (let slot = 0; slot < SLOTS; slot++) {
        const taken = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1, $2) AS ok", [LOCK_KEY, slot])
        if (taken.rows[0]!.ok) {
          holder = client
          return
        }
      }
      await new Promise((r) => setTimeout(r, 250))
    }
  }, 30 * 60_000)

  afterAll(async () => {
    await holder?.end()
  })
}
