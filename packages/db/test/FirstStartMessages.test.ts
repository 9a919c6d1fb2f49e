/**
 * What the embedded database says on a first start (docs/CONFIGURATION.md, the embedded database):
 * the build making the migrated template (`EmbeddedTemplate.make`, no template looked for) says
 * it creates a new database, never that a migrated template is missing; a start that found no
 * template says where it looked and how to make one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"

describe("first start messages", () => {
  it("making the template says it creates a new database, not that no migrated template was found", () => {
    const line = Database.creatingMessage("/tmp/t/pglite", null, undefined)
    assert.strictEqual(
      line,
      "creating a new embedded database in /tmp/t/pglite: PGlite's initdb and every migration run now, 15-40 s"
    )
    assert.notInclude(line, "template")
    assert.strictEqual(
      Database.createdMessage(12_345, null, undefined),
      "created the embedded database in 12.3 s with PGlite's initdb"
    )
  })

  it("a first start without a template says where it looked and how to make one", () => {
    const line = Database.creatingMessage("/d/pglite", "/app/dist/embedded-template.tar.gz", undefined)
    assert.include(line, "no migrated template at /app/dist/embedded-template.tar.gz")
    assert.include(line, "npm run build makes the template")
    assert.include(Database.createdMessage(1000, "/app/dist/t.tar.gz", undefined), "(no template)")
  })

  it("a first start from the template names it", () => {
    assert.strictEqual(
      Database.creatingMessage("/d/pglite", "/t.tar.gz", "/t.tar.gz"),
      "creating the embedded database in /d/pglite (first start) from the migrated template /t.tar.gz"
    )
    assert.strictEqual(
      Database.createdMessage(2500, "/t.tar.gz", "/t.tar.gz"),
      "created the embedded database in 2.5 s from the migrated template"
    )
  })
})
