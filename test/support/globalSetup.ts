/** Once per test run: in real mode, (re)create the migrated template database. */
import { prepareTemplate, testDatabaseUrl } from "@switchboard/db/testing"

export default async function setup() {
  const url = testDatabaseUrl()
  if (url) await prepareTemplate(url)
}
