/**
 * docs/ARCHITECTURE.md "Where things happen" is a map from behaviour to files: every file it names
 * exists, every name in backticks in the brackets after a file is in that file's text (a symbol, an
 * event, a setting), every row names at least one file, and the behaviours a newcomer looks for
 * first have a row.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")

interface Row {
  readonly behaviour: string
  readonly files: ReadonlyArray<{ readonly file: string; readonly names: ReadonlyArray<string> }>
}

const FILE = /`([\w./-]+\.(?:ts|mjs|md))`/g
/** A name a file's text holds: an identifier, or a dotted or dashed name (`message.received`). */
const NAME = /^[\w$.-]+$/

/** What follows a file up to the next one: its brackets, if it has any (nested ones included). */
const bracketsOf = (rest: string): string => {
  if (!rest.startsWith(" (")) return ""
  let depth = 0
  for (let i = 1; i < rest.length; i++) {
    if (rest[i] === "(") depth++
    else if (rest[i] === ")" && --depth === 0) return rest.slice(2, i)
  }
  return rest.slice(2)
}

/** The rows of the section of `page` (a Markdown document) headed "Where things happen". */
const rowsOf = (page: string): ReadonlyArray<Row> => {
  const section = /^## Where things happen\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(page)?.[1] ?? ""
  return section.split("\n").filter((line) => line.startsWith("| ") && !line.startsWith("| Behaviour"))
    .map((line) => {
      const [behaviour = "", cell = ""] = line.split(" | ")
      const found = [...cell.matchAll(FILE)]
      return {
        behaviour: behaviour.replace(/^\| /, ""),
        files: found.map((m, k) => {
          const end = found[k + 1]?.index ?? cell.length
          const brackets = bracketsOf(cell.slice(m.index + m[0].length, end))
          const names = [...brackets.matchAll(/`([^`]+)`/g)].map((n) => n[1]!)
            .filter((name) => NAME.test(name) && !name.includes("/"))
          return { file: m[1]!, names }
        })
      }
    })
}

/** What is wrong with the map `rows` against the tree at `dir`: a missing file, a name its file lacks. */
const problemsOf = (rows: ReadonlyArray<Row>, dir: string): ReadonlyArray<string> =>
  rows.flatMap((row) =>
    row.files.flatMap(({ file, names }) => {
      const path = join(dir, file)
      if (!existsSync(path)) return [`${row.behaviour}: ${file} does not exist`]
      const text = readFileSync(path, "utf8")
      return names.filter((name) => !text.includes(name)).map((name) => `${row.behaviour}: ${file} has no ${name}`)
    })
  )

const rows = rowsOf(readFileSync(join(root, "docs", "ARCHITECTURE.md"), "utf8"))

describe("docs/ARCHITECTURE.md \"Where things happen\"", () => {
  it("names only files that exist and names that are in them, at least one file a row", () => {
    assert.isAbove(rows.length, 10)
    assert.deepStrictEqual(problemsOf(rows, root), [])
    assert.deepStrictEqual(rows.filter((row) => row.files.length === 0).map((row) => row.behaviour), [])
  })

  it("reads a row's files and the names in their brackets, and fails a row that names what is not there", () => {
    const page = [
      "## Where things happen",
      "",
      "| Behaviour | Files |",
      "|---|---|",
      "| A | `docs/ARCHITECTURE.md` (the map, `Where things happen`? no: `rowsOf`), `docs/NOPE.md` |",
      "| B | `test/whereThingsHappen.test.ts` (`rowsOf`, `problemsOf`, `POST /v1/x`), `docs/ARCHITECTURE.md` |",
      "",
      "## Next"
    ].join("\n")
    const parsed = rowsOf(page)
    assert.deepStrictEqual(parsed, [
      {
        behaviour: "A",
        files: [{ file: "docs/ARCHITECTURE.md", names: ["rowsOf"] }, { file: "docs/NOPE.md", names: [] }]
      },
      {
        behaviour: "B",
        files: [{ file: "test/whereThingsHappen.test.ts", names: ["rowsOf", "problemsOf"] }, {
          file: "docs/ARCHITECTURE.md",
          names: []
        }]
      }
    ])
    assert.deepStrictEqual(problemsOf(parsed, root), [
      "A: docs/ARCHITECTURE.md has no rowsOf",
      "A: docs/NOPE.md does not exist"
    ])
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
        /^Media/m,
        /^QR inbound: .*stored/m,
        /^LID merge/m,
        /^Webhook auto-disable/m,
        /^Shard locks .*scale out or in/m,
        /^QR pairing/m,
        /^A process starts/m
      ]
    ) assert.match(behaviours, wanted)
  })
})
