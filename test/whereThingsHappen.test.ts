/**
 * docs/ARCHITECTURE.md "Where things happen" is a map from behaviour to files: every file it names
 * exists, every row names at least one, and the behaviours a newcomer looks for first have a row.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const page = readFileSync(join(root, "docs", "ARCHITECTURE.md"), "utf8")
const section = /^## Where things happen\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(page)?.[1] ?? ""
const rows = section.split("\n").filter((line) => line.startsWith("| ") && !line.startsWith("| Behaviour"))
  .map((line) => {
    const [behaviour = "", files = ""] = line.split(" | ")
    return {
      behaviour: behaviour.replace(/^\| /, ""),
      files: [...files.matchAll(/`([\w./-]+\.(?:ts|mjs|md))`/g)].map((m) => m[1]!)
    }
  })

describe("docs/ARCHITECTURE.md \"Where things happen\"", () => {
  it("names only files that exist, at least one a row", () => {
    assert.isAbove(rows.length, 10)
    const missing = rows.flatMap((row) => row.files.filter((file) => !existsSync(join(root, file))))
    assert.deepStrictEqual(missing, [])
    assert.deepStrictEqual(rows.filter((row) => row.files.length === 0).map((row) => row.behaviour), [])
  })

  it("has a row for each behaviour a newcomer looks for first", () => {
    const behaviours = rows.map((row) => row.behaviour).join("\n")
    for (
      const wanted of [
        /^Send/m,
        /^Dispatch/m,
        /^Message state machine/m,
        /^Webhook signing/m,
        /retries/,
        /^QR safety/m,
        /^Sandbox inbound/m,
        /imports/,
        /^Template rendering/m,
        /reopened/,
        /^Rate limits/m,
        /^Media/m
      ]
    ) assert.match(behaviours, wanted)
  })
})
