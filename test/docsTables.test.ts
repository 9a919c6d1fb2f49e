/**
 * The contract pages in docs/ (state machines, events, retries, limits) carry tables generated
 * from the code that enforces them: a committed table that differs from what the code says fails
 * here, with the command that rewrites it.
 */
import { readFileSync } from "node:fs"
import { basename } from "node:path"
import { describe, expect, it } from "vitest"
import { docsFiles, fill, TABLES } from "../scripts/docs-tables.js"

describe("docs/ tables", () => {
  const files = docsFiles().map((file) => ({ name: basename(file), text: readFileSync(file, "utf8") }))

  it.each(files.map((f) => [f.name, f.text] as const))(
    "%s matches the code (node --import tsx scripts/docs-tables.ts)",
    (_, text) => {
      expect(fill(text)).toBe(text)
    }
  )

  it("every generated table appears in some page, filled", () => {
    for (const name of Object.keys(TABLES)) {
      const page = files.find((f) => f.text.includes(`<!-- generated:${name} -->\n|`))
      expect(page, name).toBeDefined()
    }
  })

  it("the channel table is the state machine's answer for every status", () => {
    const page = files.find((f) => f.name === "STATE-MACHINES.md")!.text
    // `connected` refuses nothing and a lost link degrades it; an archived channel refuses qr/start
    expect(page).toMatch(/\| transient close \| · \| · \| · \| degraded \(link_lost\) \|/)
    expect(page).toMatch(/\| `qr\/start` \|.*\| refused \(channel_suspended\) \| refused \(channel_archived\) \|/)
  })
})
