/**
 * Once per test run: the CA bundle that trusts the fake WhatsApp media host; the services' build (dist/); in real mode, (re)create the migrated template database; in embedded mode,
 * dump a migrated embedded database for the files to start from, and say once why the real-mode
 * suites are skipped.
 */
import { prepareSeed, prepareTemplate, testDatabaseUrl } from "@switchboard/db/testing"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { writeTrustBundle } from "../fake-whatsapp/MediaTls.js"
import { buildServiceBundles } from "./ServiceBundles.js"

export default async function setup() {
  // the fake WhatsApp's media host speaks HTTPS: test workers (forked after this, inheriting the
  // environment) and the service processes they spawn trust its throwaway CA besides the system's
  process.env["NODE_EXTRA_CA_CERTS"] = writeTrustBundle(join(tmpdir(), "switchboard-test"))
  // the services the tests start run the production build (`npm run build`, ServiceBundles.ts):
  // made here unless dist/ already holds it for the sources as they are
  const built = await buildServiceBundles()
  if (built.length > 0) console.log(`built ${built.join(", ")} into dist/ (npm run build)`)
  const url = testDatabaseUrl()
  if (url) await prepareTemplate(url)
  else {
    await prepareSeed()
    console.log(
      "embedded mode: the suites that need real Postgres and Redis (several processes on one database: " +
        "topology, failover, chaos, production settings) are skipped; run them with " +
        "DATABASE_URL=postgres://... REDIS_URL=redis://... npm test (the fault files: npm run test:faults)"
    )
  }
}
