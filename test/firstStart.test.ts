/**
 * A first start on an empty `DATA_DIR` (embedded mode) loads the build's migrated template
 * (`dist/embedded-template.tar.gz`, packages/db/src/EmbeddedTemplate.ts) instead of creating a
 * database with PGlite's initdb and running every migration, says so and how long it took; a
 * template older than the code's migrations still ends with every migration applied. The same start
 * serves the console `npm run build` bundled (dist/console). How long a
 * first start takes is measured in bench/RESULTS.md ("First start"), not here.
 */
import { SqlClient } from "@effect/sql"
import { Database, EmbeddedTemplate, Migrations } from "@switchboard/db"
import { templateName } from "@switchboard/db/testing"
import { Effect } from "effect"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { isTemplateFresh, TEMPLATE } from "../scripts/build.js"
import { freePort, READY_DEADLINE_MS, startService, waitUntilUp } from "./support/Processes.js"

const root = resolve(import.meta.dirname, "..")
const dir = mkdtempSync(join(tmpdir(), "sbt-first-start-"))

describe("first start on an empty DATA_DIR", () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("the build made a migrated template beside the bundles (npm run build, and npm start's prestart when there is none)", () => {
    assert.isTrue(existsSync(join(root, "dist", TEMPLATE)))
    assert.isTrue(isTemplateFresh(), "the global setup's build is fresh for the migrations as they are")
  })

  it("npm start's bundle loads the template and says how long the first start took", async () => {
    const dataDir = join(dir, "served")
    const service = startService("standalone", { DATA_DIR: dataDir }, await freePort())
    try {
      await waitUntilUp(service, "/ready", READY_DEADLINE_MS)
      const log = service.output()
      assert.include(
        log,
        `creating the embedded database in ${join(dataDir, "pglite")} (first start) from the migrated template ${
          join(root, "dist", TEMPLATE)
        }`
      )
      assert.match(log, /created the embedded database in \d+\.\d s from the migrated template/)
      assert.notInclude(log, "initdb")
      assert.isTrue(existsSync(join(dataDir, "pglite", "PG_VERSION")))
      // and it serves the console the build bundled: the page, its script and what that imports
      const page = await fetch(`${service.baseUrl}/console`)
      assert.strictEqual(page.status, 200)
      assert.include(await page.text(), `src="/console/app.js"`)
      const script = await fetch(`${service.baseUrl}/console/app.js`)
      assert.strictEqual(script.status, 200)
      for (const [, name] of (await script.text()).matchAll(/from\s*"\.\/([^"]+)"/g)) {
        assert.strictEqual((await fetch(`${service.baseUrl}/console/${name}`)).status, 200, name)
      }
    } finally {
      assert.strictEqual(await service.stop(), 0)
    }
  }, READY_DEADLINE_MS + 30_000)

  it("a template older than the code's migrations: the start applies the ones it lacks, once", async () => {
    const ids = Object.keys(Migrations.migrations).map((key) => Number(key.split("_")[0]))
    const [last, beforeLast] = [ids[ids.length - 1]!, ids[ids.length - 2]!]
    // a template as the build of the code before the last migration made it: made once for this
    // list of migrations and kept in the OS temp folder, as the test seed is (`seedFile`), since
    // making it (PGlite's initdb and every migration) took most of this test's time (88 s of CPU-bound
    // work at a full run's load)
    const older = join(tmpdir(), `${templateName().replace("template", "older")}-${beforeLast}.tar.gz`)
    if (!existsSync(older)) await EmbeddedTemplate.make(older, { compression: "gzip", through: beforeLast })
    const start = (dataDir: string) =>
      Effect.gen(function*() {
        const applied = yield* Migrations.run
        const sql = yield* SqlClient.SqlClient
        const recorded = yield* Migrations.applied
        const tables = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`
        return { applied, recorded, tables: tables[0]!.n }
      }).pipe(Effect.provide(Database.layerEmbedded(dataDir, undefined, 0, older)), Effect.scoped, Effect.runPromise)
    const dataDir = join(dir, "older")
    const first = await start(dataDir)
    assert.deepStrictEqual(first.applied.map(([id]) => id), [last], "only the migration the template lacks")
    assert.deepStrictEqual(first.recorded.map(([id]) => id), ids, "every migration recorded")
    assert.isAbove(first.tables, 20)
    // the next start finds its database (not the template) and nothing to apply
    const second = await start(dataDir)
    assert.deepStrictEqual(second.applied, [])
    assert.deepStrictEqual(second.recorded.map(([id]) => id), ids)
  }, 600_000)

  it(
    "a first start cut off while creating the database (kill -9 mid-load): the next start makes it again",
    async () => {
      const dataDir = join(dir, "cut-off")
      // what a kill -9 during the template's load left (found by trying main as a user): the mark,
      // PG_VERSION and a data folder PGlite cannot open ("PGlite failed to initialize properly")
      mkdirSync(join(dataDir, "pglite", "base"), { recursive: true })
      writeFileSync(join(dataDir, "pglite", "PG_VERSION"), "17\n")
      writeFileSync(join(dataDir, "pglite.creating"), "12345")
      const recorded = await Migrations.applied.pipe(
        Effect.provide(Database.layerEmbedded(dataDir, undefined, 0, join(root, "dist", TEMPLATE))),
        Effect.scoped,
        Effect.runPromise
      )
      assert.deepStrictEqual(
        recorded.map(([id]) => id),
        Object.keys(Migrations.migrations).map((key) => Number(key.split("_")[0]))
      )
      assert.isFalse(existsSync(join(dataDir, "pglite.creating")), "the mark goes once the database is made")
    },
    600_000
  )
})
