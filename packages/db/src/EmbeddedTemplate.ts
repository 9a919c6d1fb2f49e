/**
 * A migrated embedded database, made once and copied: the one definition behind the build's
 * template (`npm run build` writes `dist/embedded-template.tar.gz`, scripts/build.ts), which a first
 * start on an empty `DATA_DIR` loads instead of creating a database (`Database.layerEmbedded`), and
 * the test suite's seed (`@switchboard/db/testing` `prepareSeed`, `seededDataDir`).
 *
 * Why: creating an embedded database runs PGlite's initdb (two Postgres starts and a cluster made
 * from nothing, 15-30 s on a loaded 2-core machine) and then every migration (2-3 s); loading the
 * dump of one already made is one Postgres start. A template older than the code is fine: the
 * start applies the migrations it lacks (`Migrations.run` records each one applied).
 */
import { Effect } from "effect"
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import * as Database from "./Database.js"
import * as Migrations from "./Migrations.js"

/** The build's template: `dist/embedded-template.tar.gz`, where `Database.builtTemplate()` looks. */
export const BUILT_FILE_NAME = Database.TEMPLATE_FILE_NAME

/**
 * Creates an embedded database in a temporary folder, applies the migrations (all of them, or
 * those with an id up to `through`), and writes the dump of its data folder (PGlite `dumpDataDir`)
 * to `target`: a tar, gzip-compressed when `compression` says so (the build's 40 MB become 5 MB).
 * Written under a temporary name and renamed: a concurrent reader finds the old file or the new
 * one, never half of one. Takes as long as a first start without a template (15-30 s).
 */
export const make = async (
  target: string,
  options: { readonly compression?: "none" | "gzip"; readonly through?: number } = {}
): Promise<void> => {
  const dataDir = mkdtempSync(join(tmpdir(), "sb-template-"))
  try {
    await Effect.runPromise(
      (options.through === undefined ? Migrations.run : Migrations.runThrough(options.through)).pipe(
        Effect.provide(Database.layerEmbedded(dataDir, undefined, 0, null)),
        Effect.scoped,
        Effect.orDie
      )
    )
    const { PGlite } = await import("@electric-sql/pglite")
    const { pg_trgm } = await import("@electric-sql/pglite/contrib/pg_trgm")
    const db = await PGlite.create(join(dataDir, "pglite"), { extensions: { pg_trgm } })
    try {
      const dump = await db.dumpDataDir(options.compression ?? "none")
      mkdirSync(dirname(target), { recursive: true })
      const partial = `${target}.${process.pid}.partial`
      writeFileSync(partial, Buffer.from(await dump.arrayBuffer()))
      renameSync(partial, target)
    } finally {
      await db.close()
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/**
 * `dataDir` (a `DATA_DIR`) holding the database `template` dumped (in `<dataDir>/pglite`, where
 * the embedded database looks), as a first start would load it: for processes a test starts on a
 * database already made (`seededDataDir`).
 */
export const load = async (template: string, dataDir: string): Promise<void> => {
  mkdirSync(dataDir, { recursive: true })
  const { PGlite } = await import("@electric-sql/pglite")
  const { pg_trgm } = await import("@electric-sql/pglite/contrib/pg_trgm")
  const db = await PGlite.create(join(dataDir, "pglite"), {
    extensions: { pg_trgm },
    loadDataDir: new Blob([readFileSync(template)])
  })
  await db.close()
}
