/**
 * Once per test run: in real mode, (re)create the migrated template database; in embedded mode,
 * dump a migrated embedded database for the files to start from, and say once why the real-mode
 * suites are skipped.
 */
import { prepareSeed, prepareTemplate, testDatabaseUrl } from "@switchboard/db/testing"

export default async function setup() {
  const url = testDatabaseUrl()
  if (url) await prepareTemplate(url)
  else {
    await prepareSeed()
    console.log(
      "embedded mode: the suites that need real Postgres and Redis (several processes on one database: " +
        "topology, failover, chaos, production settings) are skipped; run them with " +
        "DATABASE_URL=postgres://... REDIS_URL=redis://... npm test"
    )
  }
}
