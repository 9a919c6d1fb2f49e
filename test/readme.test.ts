import { assert, describe, it } from "@effect/vitest"
import { Scopes } from "@switchboard/domain"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { queryTable, requiredScopes, scopesTable } from "../scripts/scopes-table.js"

describe("README and docs/API.md", () => {
  it("carries the endpoint table generated from the contract", () => {
    const readme = readFileSync(resolve(import.meta.dirname, "..", "docs", "API.md"), "utf8")
    const section = /<!-- endpoints:start -->\n([\s\S]*?)\n<!-- endpoints:end -->/.exec(readme)?.[1]
    assert.strictEqual(section, scopesTable(), "regenerate with: node --import tsx scripts/scopes-table.ts")
  })

  it("carries the list filters table generated from the contract", () => {
    const readme = readFileSync(resolve(import.meta.dirname, "..", "docs", "API.md"), "utf8")
    const section = /<!-- query:start -->\n([\s\S]*?)\n<!-- query:end -->/.exec(readme)?.[1]
    assert.strictEqual(section, queryTable(), "regenerate with: node --import tsx scripts/scopes-table.ts query")
  })

  it("lists every scope, and as reserved exactly those no route requires", () => {
    const readme = readFileSync(resolve(import.meta.dirname, "..", "docs", "API.md"), "utf8")
    const section = /<!-- scopes:start -->([\s\S]*?)<!-- scopes:end -->/.exec(readme)?.[1] ?? ""
    const [inUse, reserved] = section.split("and the reserved")
    const named = (text = "") => [...text.matchAll(/`([a-z.]+)`/g)].map((m) => m[1]!).sort()
    const used = requiredScopes()
    assert.deepStrictEqual(named(inUse), Scopes.SCOPES.filter((s) => used.has(s)).sort())
    assert.deepStrictEqual(named(reserved), Scopes.SCOPES.filter((s) => !used.has(s)).sort())
    assert.deepStrictEqual([...Scopes.RESERVED_SCOPES].sort(), named(reserved))
  })
})
