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
})
