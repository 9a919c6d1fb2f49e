/**
 * The dependency rules between workspace packages (README "Architecture"), checked on the
 * sources: every import of a workspace package from `packages/*\/src` or `services/*\/src` must
 *
 * - be declared in the importing package's `package.json` `dependencies`, and
 * - point down the layers below (never up, never sideways), and
 * - not reach into another package by a relative path.
 *
 * Declared dependencies must follow the same direction. `npm run check:deps` prints every
 * violation (file and import) and exits 1; `test/architecture.test.ts` runs the same check.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve, sep } from "node:path"
import { pathToFileURL } from "node:url"

/** Lowest first: a package may import packages of lower layers only. */
export const LAYERS: ReadonlyArray<ReadonlyArray<string>> = [
  ["@switchboard/domain"],
  ["@switchboard/api", "@switchboard/infra", "@switchboard/db"],
  ["@switchboard/providers", "@switchboard/webhooks", "@switchboard/sdk"],
  ["@switchboard/entities"],
  ["@switchboard/service-api", "@switchboard/service-runner"],
  ["@switchboard/service-admin", "@switchboard/service-standalone"]
]

/** Narrower than its layer: the SDK is what users install, so it stays on the HTTP contract. */
export const ONLY: Readonly<Record<string, ReadonlyArray<string>>> = {
  "@switchboard/sdk": ["@switchboard/domain", "@switchboard/api"]
}

const SCOPE = "@switchboard/"

export interface SourceFile {
  /** Relative to the repository root, for messages */
  readonly path: string
  readonly text: string
}

export interface WorkspacePackage {
  readonly name: string
  /** Relative to the repository root (`packages/db`) */
  readonly dir: string
  readonly dependencies: Readonly<Record<string, string>>
  readonly files: ReadonlyArray<SourceFile>
}

const rank = (name: string): number => LAYERS.findIndex((layer) => layer.includes(name))

/** Whether `from` may depend on `to` by the layers (and `ONLY`). */
export const mayImport = (from: string, to: string): boolean => {
  const only = ONLY[from]
  if (only !== undefined && !only.includes(to)) return false
  const a = rank(from)
  const b = rank(to)
  return a >= 0 && b >= 0 && b < a
}

const allowedList = (from: string) => {
  const names = LAYERS.flat().filter((to) => mayImport(from, to))
  return names.length === 0 ? "nothing" : names.join(", ")
}

/** The module specifiers of static imports and re-exports, side-effect imports and `import()`. */
export const importsOf = (text: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  const patterns = [
    /^\s*(?:import|export)\b[^"'`]*?\bfrom\s*["']([^"']+)["']/gm,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g
  ]
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) found.push(match[1]!)
  }
  return found
}

/** `@switchboard/db/testing` -> `@switchboard/db` */
const packageOf = (specifier: string) => specifier.split("/").slice(0, 2).join("/")

/** Every violation, as one line naming the file (or package.json) and the import. */
export const check = (workspace: ReadonlyArray<WorkspacePackage>): ReadonlyArray<string> => {
  const violations: Array<string> = []
  const names = new Set(workspace.map((pkg) => pkg.name))
  for (const pkg of workspace) {
    if (rank(pkg.name) < 0) {
      violations.push(`${pkg.dir}: ${pkg.name} has no layer: add it to LAYERS in scripts/check-deps.ts`)
      continue
    }
    for (const dependency of Object.keys(pkg.dependencies)) {
      if (names.has(dependency) && !mayImport(pkg.name, dependency)) {
        violations.push(
          `${pkg.dir}/package.json: declares ${dependency}, against the layers (${pkg.name} may import ${
            allowedList(pkg.name)
          })`
        )
      }
    }
    for (const file of pkg.files) {
      for (const specifier of importsOf(file.text)) {
        if (specifier.startsWith(".")) {
          const target = join(dirname(file.path), specifier)
          if (target !== pkg.dir && !target.startsWith(pkg.dir + sep) && !target.startsWith(pkg.dir + "/")) {
            violations.push(`${file.path}: imports "${specifier}", outside ${pkg.dir} (import the package by name)`)
          }
          continue
        }
        if (!specifier.startsWith(SCOPE)) continue
        const target = packageOf(specifier)
        if (target === pkg.name) continue
        if (!names.has(target)) {
          violations.push(`${file.path}: imports "${specifier}", not a workspace package`)
          continue
        }
        if (!mayImport(pkg.name, target)) {
          violations.push(
            `${file.path}: imports "${specifier}", against the layers (${pkg.name} may import ${allowedList(pkg.name)})`
          )
        } else if (!(target in pkg.dependencies)) {
          violations.push(
            `${file.path}: imports "${specifier}", not declared in ${pkg.dir}/package.json "dependencies"`
          )
        }
      }
    }
  }
  return violations
}

const sourcesUnder = (root: string, dir: string): Array<SourceFile> => {
  const out: Array<SourceFile> = []
  const walk = (path: string) => {
    const stat = statSync(path, { throwIfNoEntry: false })
    if (!stat) return
    if (stat.isDirectory()) {
      if (path.endsWith("node_modules")) return
      for (const entry of readdirSync(path).sort()) walk(join(path, entry))
    } else if (/\.(ts|tsx|mts|cts|js|mjs)$/.test(path)) {
      out.push({ path: relative(root, path).split(sep).join("/"), text: readFileSync(path, "utf8") })
    }
  }
  walk(join(root, dir, "src"))
  return out
}

/** The workspace packages under `packages/*` and `services/*` of `root`, with their sources. */
export const scan = (root: string): ReadonlyArray<WorkspacePackage> =>
  ["packages", "services"].flatMap((group) =>
    existsSync(join(root, group))
      ? readdirSync(join(root, group)).sort().flatMap((entry): Array<WorkspacePackage> => {
        const dir = `${group}/${entry}`
        const manifest = join(root, dir, "package.json")
        if (!existsSync(manifest)) return []
        const json = JSON.parse(readFileSync(manifest, "utf8")) as {
          readonly name: string
          readonly dependencies?: Record<string, string>
        }
        return [{ name: json.name, dir, dependencies: json.dependencies ?? {}, files: sourcesUnder(root, dir) }]
      })
      : []
  )

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = resolve(import.meta.dirname, "..")
  const workspace = scan(root)
  const violations = check(workspace)
  if (violations.length > 0) {
    console.error(`check-deps: ${violations.length} violation(s) of the package rules (README "Architecture"):`)
    for (const line of violations) console.error(`  ${line}`)
    process.exit(1)
  }
  const files = workspace.reduce((n, pkg) => n + pkg.files.length, 0)
  console.log(`check-deps: ${workspace.length} packages, ${files} files: imports declared and downward`)
}
