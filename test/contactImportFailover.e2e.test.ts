/**
 * kill -9 of the runner in the middle of a 50 000-row contact import: a new runner takes the
 * import worker over and the import completes with the counts of an uninterrupted run, without
 * a duplicate contact and with one `contact.import_completed`. Real Postgres only.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import pg from "pg"
import { BAD, makeFile, REPEATS, ROWS } from "../bench/lib/ContactsFile.js"
import { admin, call, freePort, READY_DEADLINE_MS, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("contact import across a runner failure", () => {
  const processes: Array<ServiceProcess> = []
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let db: pg.Client
  let api = ""
  let env: Record<string, string> = {}

  const startRunner = async () => {
    const [cluster, health] = await Promise.all([freePort(), freePort()])
    const runner = startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(cluster) }, health!)
    processes.push(runner)
    return runner
  }

  beforeAll(async () => {
    database = await e2eDatabase(url!, "contactimport")
    db = new pg.Client({ connectionString: database.url })
    await db.connect()
    env = { DATABASE_URL: database.url, LOG_LEVEL: "error" }
    await startRunner()
    const apiPort = await freePort()
    processes.push(startService("api", env, apiPort))
    api = `http://127.0.0.1:${apiPort}`
    await waitFor(`${api}/ready`, READY_DEADLINE_MS).catch((error) => {
      throw new Error(`${error}\n${processes.map((p) => p.output()).join("\n---\n").slice(-3000)}`)
    })
  }, 240_000)

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await db?.end()
    await database?.drop()
  }, 90_000)

  it("completes with exact counts and no duplicates after the runner is killed mid-import", async () => {
    const dbEnv = { DATABASE_URL: database!.url }
    const password = "correct horse battery staple"
    const created = await admin([
      "create-user",
      "--email",
      "import@example.com",
      "--password",
      password,
      "--name",
      "I",
      "--workspace",
      "I",
      "--verified"
    ], dbEnv)
    await admin(["override", "--workspace", created.workspace_id, "--entitlement", "contacts", "--unlimited"], dbEnv)
    const login = await call(api, "POST", "/v1/auth/login", { body: { email: "import@example.com", password } })
    const { text, unique } = makeFile()
    const queued = await call(api, "POST", "/v1/contacts/imports", {
      token: login.body.access_token,
      workspace: created.workspace_id,
      body: { file: Buffer.from(text).toString("base64"), default_country: "DE" }
    })
    assert.strictEqual(queued.status, 202, queued.text)
    const progress = async () =>
      (await db.query<{ processed_rows: number; status: string }>(
        "SELECT processed_rows, status FROM contact_imports WHERE id = $1",
        [queued.body.id]
      )).rows[0]!
    let before = await progress()
    const deadline = Date.now() + 60_000
    while (before.processed_rows === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20))
      before = await progress()
    }
    processes[0]!.child.kill("SIGKILL")
    assert.isAbove(before.processed_rows, 0)
    assert.isBelow(before.processed_rows, ROWS, "killed before the import finished")
    await startRunner()
    let after = await progress()
    const end = Date.now() + 120_000
    while (after.status !== "completed" && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 250))
      after = await progress()
    }
    const done = await call(api, "GET", `/v1/contacts/imports/${queued.body.id}`, {
      token: login.body.access_token,
      workspace: created.workspace_id
    })
    assert.strictEqual(done.body.status, "completed")
    assert.deepStrictEqual(
      [done.body.processed_rows, done.body.created, done.body.skipped, done.body.failed],
      [ROWS, unique, REPEATS, BAD]
    )
    const contacts = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1",
      [created.workspace_id]
    )
    assert.strictEqual(contacts.rows[0]!.n, unique)
    const completed = await db.query("SELECT id FROM events WHERE type = 'contact.import_completed'")
    assert.strictEqual(completed.rowCount, 1)
  }, 240_000)
})
