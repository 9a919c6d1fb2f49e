/**
 * The console is TypeScript calling the API through the typed client (docs/CONSOLE.md "Console"):
 * no hand-written API path in its sources (a path comes from the contract: `client.<group>.<endpoint>`,
 * or `pathOf` for the two routes it reads raw), type-checked by `npm run typecheck` against the
 * contract (a request or an answer the contract changed fails there), and bundled by `npm run
 * build` into `dist/console`, whose every import the server serves.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { buildConsole } from "../scripts/build-console.js"

const root = join(import.meta.dirname, "..")
const sources = join(root, "services", "api", "console", "src")
const files = () => readdirSync(sources).filter((f) => f.endsWith(".ts"))

describe("console build", () => {
  it("calls the API through the typed client: no hand-written path, no fetch of its own", () => {
    for (const file of files()) {
      // the code, not its comments (which cite routes by their paths)
      const text = readFileSync(join(sources, file), "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(
        /(^|\s)\/\/.*$/gm,
        ""
      )
      assert.notMatch(text, /["'`]\/v1\//, `${file} writes an API path by hand`)
      assert.notMatch(text, /\bapi\("(GET|POST|PATCH|DELETE)"/, `${file} calls the API untyped`)
      // the one place that sends: the authenticated fetch the typed client is given
      if (file !== "lib.ts") assert.notMatch(text, /(^|[^\w.])fetch\(/m, `${file} calls fetch itself`)
    }
  })

  it("npm run typecheck checks the console against the contract, and a contract change breaks it", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }
    assert.include(pkg.scripts.typecheck, "services/api/console/tsconfig.json")
    // a copy of the console that asks for a route the contract does not have, and sends a body
    // member the contract does not take: the compiler refuses both
    mkdirSync(join(root, ".tmp"), { recursive: true })
    const dir = mkdtempSync(join(root, ".tmp", "console-typecheck-"))
    try {
      cpSync(sources, join(dir, "src"), { recursive: true })
      writeFileSync(
        join(dir, "src", "drift.ts"),
        [
          `import { api } from "./lib.js"`,
          `export const a = () => api.channels.rename({ path: { channelId: "ch_x" } })`,
          `export const b = () => api.channels.create({ payload: { provider: "qr", name: "n", colour: "red" } })`,
          ``
        ].join("\n")
      )
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({ extends: join(root, "services", "api", "console", "tsconfig.json"), include: ["src"] })
      )
      const tsc = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", dir], {
        cwd: root,
        encoding: "utf8"
      })
      const output = `${tsc.stdout}${tsc.stderr}`
      assert.notStrictEqual(tsc.status, 0, output)
      assert.match(output, /drift\.ts\(2,.*rename/)
      assert.match(output, /drift\.ts\(3,.*colour/)
      assert.notMatch(output, /src\/(app|lib|inbox|developers|directory|media|health|words)\.ts/, output)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 240_000)

  it("builds dist/console: the page's script, and every module a built file imports", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbt-console-build-"))
    try {
      await buildConsole(dir)
      const built = readdirSync(join(dir, "console"))
      for (const name of ["index.html", "console.css", "qrcode.mjs", "app.js", "lib.mjs", "media-types.mjs"]) {
        assert.include(built, name)
      }
      assert.include(readFileSync(join(dir, "console", "index.html"), "utf8"), `src="{{BASE}}/console/app.js"`)
      for (const name of built.filter((n) => /\.m?js$/.test(n))) {
        const text = readFileSync(join(dir, "console", name), "utf8")
        for (const [, target] of text.matchAll(/(?:from|import)\s*\(?\s*"\.\/([^"]+)"/g)) {
          assert.include(built, target, `${name} imports ${target}`)
        }
        assert.notMatch(text, /from\s*"node:/, `${name} imports a Node module`)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
