import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { scopesTable } from "../scripts/scopes-table.js"

describe("README", () => {
  it("carries the endpoint table generated from the contract", () => {
    const readme = readFileSync(resolve(import.meta.dirname, "..", "README.md"), "utf8")
    const section = /<!-- endpoints:start -->\n([\s\S]*?)\n<!-- endpoints:end -->/.exec(readme)?.[1]
    assert.strictEqual(section, scopesTable(), "regenerate with: node --import tsx scripts/scopes-table.ts")
  })
})
