/**
 * The operator CLI lists users and workspaces, and migrates (README "Run it"): real processes, against real
 * Postgres when the suite has it, else the embedded database in a fresh, already migrated `DATA_DIR`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Migrations } from "@switchboard/db"
import { e2eDatabase, seededDataDir, testDatabaseUrl } from "@switchboard/db/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { admin, adminRun } from "./support/Processes.js"

const url = testDatabaseUrl()

describe("admin list-users and list-workspaces", () => {
  let env: Record<string, string>
  let cleanup: () => Promise<void>

  beforeAll(async () => {
    if (url !== undefined) {
      const database = await e2eDatabase(url, "adminlists")
      env = { DATABASE_URL: database.url }
      cleanup = () => database.drop()
    } else {
      const dir = mkdtempSync(join(tmpdir(), "sbt-admin-"))
      env = { DATA_DIR: await seededDataDir(join(dir, "data")) }
      cleanup = async () => rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  afterAll(() => cleanup?.(), 60_000)

  it("lists every user with their workspaces, and every workspace with its owner, never a password", async () => {
    const password = "correct horse battery staple"
    const ada = await admin(
      [
        "create-user",
        "--email",
        "ada@example.com",
        "--password",
        password,
        "--name",
        "Ada",
        "--workspace",
        "Engines",
        "--verified"
      ],
      env
    )
    const bob = await admin(
      [
        "create-user",
        "--email",
        "bob@example.com",
        "--password",
        password,
        "--name",
        "Bob",
        "--workspace",
        "Looms",
        "--plan",
        "growth"
      ],
      env
    )
    const users = await admin(["list-users"], env)
    assert.deepStrictEqual(users.data.map((u: { email: string }) => u.email), ["ada@example.com", "bob@example.com"])
    assert.deepStrictEqual(users.data[0].workspaces, [{ id: ada.workspace_id, role: "owner" }])
    assert.strictEqual(users.data[0].email_verified, true)
    assert.strictEqual(users.data[1].email_verified, false)
    const workspaces = await admin(["list-workspaces"], env)
    assert.deepStrictEqual(
      workspaces.data.map((w: { id: string; name: string; plan: string; owner_email: string; members: number }) => [
        w.id,
        w.name,
        w.plan,
        w.owner_email,
        w.members
      ]),
      [[ada.workspace_id, "Engines", "free", "ada@example.com", 1], [
        bob.workspace_id,
        "Looms",
        "growth",
        "bob@example.com",
        1
      ]]
    )
    const raw = await adminRun(["list-users"], env)
    assert.notInclude(raw.out, "argon2")
    assert.notInclude(raw.out, "password")
  }, 120_000)

  it(
    "migrate applies what is missing and says how many migrations the database has (the Kubernetes migration Job)",
    async () => {
      const first = await admin(["migrate"], env)
      assert.deepStrictEqual(first, { migrations: Object.keys(Migrations.migrations).length })
      assert.deepStrictEqual(await admin(["migrate"], env), first, "a second run finds nothing to do")
    },
    120_000
  )
})
