/**
 * At most two end-to-end files (`*.e2e.test.ts`) run at once, whatever the order the workers took
 * them in (`Sequencer.ts` spreads them out, so a file seldom waits here). Each starts two to six
 * service processes and times what they do: with three of them at once on a 2-core machine, a
 * runner scaled out under load took 11.2 s to dispatch a message that must go out within 8 s
 * (`test/scaleRunners.e2e.test.ts`, a CI run of 2026-11-27). A slot is a Postgres advisory lock held
 * on a connection of the file's own for as long as the file runs; a worker that dies frees it with
 * its connection. Real mode only: the end-to-end files are skipped without a Postgres.
 */
import { testDatabaseUrl } from "@switchboard/db/testing"
import pg from "pg"
import { afterAll, beforeAll, expect } from "vitest"
import { isEndToEnd } from "./Sequencer.js"

const SLOTS = 2
/** Names the advisory locks (their first key); the slot is the second. */
const LOCK_KEY = 0x5e2e

const url = testDatabaseUrl()
const testPath = expect.getState().testPath

if (url !== undefined && testPath !== undefined && isEndToEnd(testPath)) {
  let holder: pg.Client | undefined

  beforeAll(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
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
