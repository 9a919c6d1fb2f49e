/**
 * Formats TypeScript with dprint's TypeScript plugin, offline (the wasm ships in the npm
 * package): 2 spaces, double quotes, no semicolons, line width 120. `--check` lists files that
 * are not formatted and exits 1.
 */
import { createFromBuffer } from "@dprint/formatter"
import { getPath } from "@dprint/typescript"
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join, relative, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const check = process.argv.includes("--check")

const formatter = createFromBuffer(readFileSync(getPath()))
formatter.setConfig({ indentWidth: 2, lineWidth: 120 }, {
  semiColons: "asi",
  quoteStyle: "alwaysDouble",
  trailingCommas: "never",
  "arrowFunction.useParentheses": "force",
  "operatorPosition": "maintain",
  "memberExpression.linePerExpression": false
})

const roots = ["packages", "services", "test", "scripts", "bench", "vitest.config.ts"]
const files: Array<string> = []
const walk = (path: string) => {
  const stat = statSync(path, { throwIfNoEntry: false })
  if (!stat) return
  if (stat.isDirectory()) {
    if (path.endsWith("node_modules")) return
    for (const entry of readdirSync(path)) walk(join(path, entry))
  } else if (/\.(ts|mts)$/.test(path)) files.push(path)
}
for (const r of roots) walk(join(root, r))

const unformatted: Array<string> = []
for (const file of files) {
  const text = readFileSync(file, "utf8")
  // a second pass can still move things (long chains): format to a fixed point
  let formatted = text
  for (let pass = 0; pass < 3; pass++) {
    const next = formatter.formatText({ filePath: file, fileText: formatted })
    if (next === formatted) break
    formatted = next
  }
  if (formatted !== text) {
    unformatted.push(relative(root, file))
    if (!check) writeFileSync(file, formatted)
  }
}
if (check && unformatted.length > 0) {
  console.error(`Not formatted (run npm run format):\n${unformatted.map((f) => `  ${f}`).join("\n")}`)
  process.exit(1)
}
console.log(check ? `${files.length} files formatted` : `formatted ${unformatted.length} of ${files.length} files`)
