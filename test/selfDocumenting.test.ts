/**
 * The repository documents itself: code, tests, README, docs/ and the OpenAPI descriptions cite the
 * repository's own documents, never documents that live outside it (a contract or design notes
 * a reader of this repository cannot open).
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const OUTSIDE = /\b(?:SPEC|DECISIONS)\b|\bARCHITECTURE\s+§?\d|\b(?:CLUSTER|HTTP|BAILEYS|PERF|STYLE)\.md\b/
/**
 * Phrases of a design the code has left: the Message entity as the only writer of a message's
 * status, or as what moves a message to `dispatching` (the Channel entity makes the dispatch moves
 * and receipts in process; the rule is stated once, docs/ARCHITECTURE.md "One writer per message,
 * by statement"), and the RPC-era name of those moves.
 */
const STALE = new RegExp(
  [
    String.raw`Message entity (?:is the only writer|is the sole writer|moves (?:the|a|its) messages? to)`,
    String.raw`only writer of a\s+message`,
    String.raw`One writer per message \(its Message entity\)`,
    String.raw`\(the Message entity\)`,
    String.raw`\bMessageCalls\b`
  ].join("|"),
  "i"
)

const files = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    if (name === "node_modules" || name.startsWith(".") || name === "results" || name === "data") return []
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : /\.(ts|mjs|md|sh)$/.test(name) ? [path] : []
  })

describe("the repository documents itself", () => {
  it("cites no document outside the repository", () => {
    const sources = ["packages", "services", "test", "bench", "scripts", "docs", "deploy"].flatMap((d) =>
      files(join(root, d))
    ).concat([join(root, "README.md")])
    assert.isAbove(sources.length, 100)
    const offenders = sources.flatMap((file) =>
      readFileSync(file, "utf8").split("\n").flatMap((line, i) =>
        OUTSIDE.test(line) && !file.endsWith("selfDocumenting.test.ts") ? [`${relative(root, file)}:${i + 1}`] : []
      )
    )
    assert.deepStrictEqual(offenders, [])
  })

  it("describes who writes a message's status as the code does", () => {
    const sources = ["packages", "services", "test", "docs"].flatMap((d) => files(join(root, d)))
      .concat([join(root, "README.md")])
    const offenders = sources.flatMap((file) =>
      file.endsWith("selfDocumenting.test.ts") ?
        [] :
        readFileSync(file, "utf8").split("\n").flatMap((line, i) =>
          STALE.test(line) ? [`${relative(root, file)}:${i + 1}: ${line.trim()}`] : []
        )
    )
    assert.deepStrictEqual(offenders, [])
    // the phrases the rule replaced are still recognised (a pattern that matches nothing proves nothing)
    assert.isTrue(STALE.test("The Message entity is the only writer of a"))
    assert.isTrue(STALE.test("the Message entity moves the message to `dispatching`"))
  })
})
