/**
 * Every page a person is sent to from the code's own words resolves (docs/API.md "Errors"): a
 * refusal's message, an OpenAPI description or a start-up refusal that names `docs/X.md
 * "Section"` or `README "Section"` names a file that exists and a heading (or a bold paragraph
 * lead) of it. Read from the string literals of every source file, so a section that moves
 * breaks this test rather than a user's search.
 */
import { OpenApi } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Api } from "@switchboard/api"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === "node_modules" ? [] : sourceFiles(path)
    return /\.(ts|mjs|js)$/.test(name) ? [path] : []
  })

const REGEX_BEFORE = new Set(["(", ",", "=", ":", "[", "!", "&", "|", "?", "{", "}", ";", "\n", ""])

/** The text of every string and template literal of a source file (comments and regexes skipped). */
export const literals = (source: string): Array<string> => {
  const out: Array<string> = []
  let i = 0
  let last = ""
  while (i < source.length) {
    const c = source[i]!
    if (c === "/" && source[i + 1] === "/") {
      while (i < source.length && source[i] !== "\n") i++
    } else if (c === "/" && source[i + 1] === "*") {
      i = source.indexOf("*/", i + 2) + 2
      if (i === 1) break
    } else if (c === "/" && REGEX_BEFORE.has(last)) {
      // a regular expression literal: up to its closing slash outside a class
      let inClass = false
      for (i++; i < source.length && source[i] !== "\n"; i++) {
        if (source[i] === "\\") i++
        else if (source[i] === "[") inClass = true
        else if (source[i] === "]") inClass = false
        else if (source[i] === "/" && !inClass) break
      }
      i++
      last = "x"
    } else if (c === "\"" || c === "'" || c === "`") {
      let text = ""
      for (i++; i < source.length && source[i] !== c; i++) {
        if (source[i] === "\\") text += source[++i]
        else if (c === "`" && source[i] === "$" && source[i + 1] === "{") {
          // an interpolation: its code is skipped up to the matching brace
          let depth = 0
          for (; i < source.length; i++) {
            if (source[i] === "{") depth++
            else if (source[i] === "}" && --depth === 0) break
          }
          text += "…"
        } else text += source[i]
      }
      out.push(text)
      i++
      last = "x"
    } else {
      if (!/\s/.test(c) || c === "\n") last = /\s/.test(c) ? "\n" : c
      i++
    }
  }
  return out
}

const REFERENCE = /(docs\/[A-Za-z-]+\.md|README(?:\.md)?)(?:,? +"([^"]+)"|#([a-z0-9-]+))?/g

const slug = (heading: string) => heading.trim().toLowerCase().replace(/[^\w\- ]/g, "").replace(/ /g, "-")

const withoutCode = (text: string) => text.replace(/```[\s\S]*?```/g, "")

/** Headings and bold paragraph leads of a page, as a person searches for them. */
const sectionsOf = (page: string) => {
  const text = withoutCode(readFileSync(join(root, page), "utf8"))
  return [
    ...[...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim()),
    ...[...text.matchAll(/^(?:- )?\*\*([^*]+)\*\*/gm)].map((m) => m[1]!.replace(/[.:]$/, "").trim())
  ]
}

/** What is broken in the doc references of `text` (said at `where`), and how many it has. */
const checkReferences = (where: string, text: string): { readonly broken: Array<string>; readonly found: number } => {
  const broken: Array<string> = []
  let found = 0
  for (const m of text.matchAll(REFERENCE)) {
    found++
    const page = m[1]!.startsWith("README") ? "README.md" : m[1]!
    const at = `${where}: ${m[0]}`
    if (!existsSync(join(root, page))) {
      broken.push(`${at} (no such page)`)
      continue
    }
    const sections = sectionsOf(page)
    if (m[2] !== undefined && !sections.some((s) => s.toLowerCase().startsWith(m[2]!.toLowerCase()))) {
      broken.push(`${at} (no such section)`)
    }
    if (m[3] !== undefined && !sections.some((s) => slug(s) === m[3])) broken.push(`${at} (no such anchor)`)
  }
  return { broken, found }
}

/** Every string of a JSON value, with the path that leads to it. */
const stringsOf = (value: unknown, path: string): Array<[string, string]> =>
  typeof value === "string"
    ? [[path, value]]
    : Array.isArray(value)
    ? value.flatMap((v, i) => stringsOf(v, `${path}[${i}]`))
    : typeof value === "object" && value !== null
    ? Object.entries(value).flatMap(([k, v]) => stringsOf(v, `${path}.${k}`))
    : []

describe("doc references in what the code says", () => {
  it("every doc page and section named in a string of the code exists", () => {
    const files = [
      ...["packages", "services"].flatMap((d) => sourceFiles(join(root, d))).filter((f) =>
        f.includes("/src/") || f.includes("/console/")
      )
    ]
    const broken: Array<string> = []
    let found = 0
    for (const file of files) {
      for (const text of literals(readFileSync(file, "utf8"))) {
        const checked = checkReferences(relative(root, file), text)
        broken.push(...checked.broken)
        found += checked.found
      }
    }
    assert.deepStrictEqual(broken, [])
    assert.isAbove(found, 15)
  })

  it("every doc page and section the OpenAPI document names exists (descriptions as served, interpolations included)", () => {
    const checked = stringsOf(OpenApi.fromApi(Api.Api), "openapi").map(([path, text]) => checkReferences(path, text))
    assert.deepStrictEqual(checked.flatMap((c) => c.broken), [])
    assert.isAbove(checked.reduce((n, c) => n + c.found, 0), 10)
  })

  it("reports a README section that moved to docs/, and a page that does not exist", () => {
    assert.deepStrictEqual(
      checkReferences(
        "x",
        "Limits (README \"Number protection\"); see docs/NOPE.md; docs/LIMITS.md \"Number protection\""
      )
        .broken,
      ["x: README \"Number protection\" (no such section)", "x: docs/NOPE.md (no such page)"]
    )
  })
})
