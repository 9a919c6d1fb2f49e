/**
 * The dependency rules between workspace packages (docs/ARCHITECTURE.md "Architecture"), checked on the
 * sources: every import of a workspace package from `packages/*\/src` or `services/*\/src` must
 *
 * - be declared in the importing package's `package.json` `dependencies`, and
 * - point down the layers below (never up, never sideways), and
 * - not reach into another package by a relative path.
 *
 * Declared dependencies must follow the same direction. And (`checkSources`):
 *
 * - no `any` in `packages/*\/src` and `services/*\/src` (a row, an event or an endpoint has a
 *   type; see docs/ARCHITECTURE.md "Architecture"), and
 * - no file in `packages/*\/src` over 350 lines unless its header comment says why, in a line
 *   starting `Over 350 lines` (e.g. packages/providers/src/qr/QrConnection.ts), and none in
 *   `packages/*\/src` or `services/*\/src` over `HARD_MAX_LINES` (500) whatever it says: a file
 *   that long does more than one job (recorded data is JSON, not code), and
 * - no id cast (`as X["id"]`, `as X["contact_id"]`, `` as `cnt_${string}` ``) in `packages/*\/src`
 *   and `services/*\/src`: a repo decodes its rows
 *   with the schema that brands their ids, and a hot path types an id with a check (`Ids.isId`),
 *   so no cast is left and none is allowed (docs/ARCHITECTURE.md, "Rows decode to
 *   domain types"), and
 * - no row type asserted (`` sql<Row>`...` ``) in `packages/db/src`: a statement's rows are decoded
 *   with a schema (`Rows.decodeRows`), so a row that does not match fails instead of passing as
 *   its type (the migration machinery, `Migrations.ts` and `Partitions.ts`, reads Postgres'
 *   catalog while it changes the schema, and is left out).
 *
 * `npm run check:deps` prints every violation (file and line or import) and exits 1;
 * `test/architecture.test.ts` runs the same checks.
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

/**
 * Packages whose barrel (`src/index.ts`) exports namespaces only (`export * as X from "./X.js"`),
 * so an import names the module it comes from (`Redis.layer`, `Operator.Operator`): every
 * workspace package but the sdk, whose flat names are what users install (docs/ARCHITECTURE.md
 * "Barrels").
 */
export const NAMESPACE_BARRELS: ReadonlySet<string> = new Set([
  "@switchboard/api",
  "@switchboard/db",
  "@switchboard/domain",
  "@switchboard/entities",
  "@switchboard/infra",
  "@switchboard/providers",
  "@switchboard/webhooks",
  "@switchboard/service-api",
  "@switchboard/service-runner"
])

/** The longest a file in `packages/*\/src` may be without saying why in its header. */
export const MAX_LINES = 350

/** The longest a source file in `packages/*\/src` or `services/*\/src` may be, whatever its header says. */
export const HARD_MAX_LINES = 500

/**
 * `text` with comments, string and template literals and regular expression literals blanked
 * (newlines kept, so line numbers still hold): what is left is code and types.
 */
export const codeOf = (text: string): string => {
  const out = text.split("")
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== "\n") out[k] = " "
  }
  /** Brace depths of the `${` we are inside, innermost last. */
  const templates: Array<number> = []
  let depth = 0
  let i = 0
  /** The end of a string or template body starting at `i` (after its opening quote). */
  const skipQuoted = (quote: string): number => {
    while (i < text.length) {
      const c = text[i]!
      if (c === "\\") i += 2
      else if (c === quote) return i++
      else if (quote === "`" && c === "$" && text[i + 1] === "{") return i
      else if (c === "\n" && quote !== "`") return i
      else i++
    }
    return i
  }
  const template = () => {
    const start = i
    const end = skipQuoted("`")
    blank(start, end)
    if (text[end] === "$") {
      templates.push(depth)
      depth++
      i = end + 2
    }
  }
  while (i < text.length) {
    const c = text[i]!
    const next = text[i + 1]
    if (c === "/" && next === "/") {
      const end = text.indexOf("\n", i)
      const stop = end < 0 ? text.length : end
      blank(i, stop)
      i = stop
    } else if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2)
      const stop = end < 0 ? text.length : end + 2
      blank(i, stop)
      i = stop
    } else if (c === "\"" || c === "'") {
      const start = ++i
      blank(start, skipQuoted(c))
    } else if (c === "`") {
      i++
      template()
    } else if (c === "/" && /[(,=:[!&|?{};]$/.test(text.slice(0, i).trimEnd() || ";")) {
      const start = ++i
      let inClass = false
      while (i < text.length && text[i] !== "\n") {
        const r = text[i]!
        if (r === "\\") i++
        else if (r === "[") inClass = true
        else if (r === "]") inClass = false
        else if (r === "/" && !inClass) break
        i++
      }
      blank(start, i)
      i++
    } else if (c === "{") {
      depth++
      i++
    } else if (c === "}") {
      depth--
      i++
      if (templates.length > 0 && templates[templates.length - 1] === depth) {
        templates.pop()
        template()
      }
    } else {
      i++
    }
  }
  return out.join("")
}

/** `any` in code or types, not as a property name (`.any`) or part of a longer name. */
const ANY = /(?<![.\w$])any(?![\w$])/

/** A statement whose rows are typed by assertion: `` sql<Row>`...` `` (`sql.unsafe<Row>(...)` too). */
const ASSERTED_ROWS = /\bsql(?:\.unsafe)?\s*</

/** The files of `packages/db/src` that may assert row types: the migration machinery (see the module comment). */
const CATALOG_READERS = new Set(["packages/db/src/Migrations.ts", "packages/db/src/Partitions.ts"])

/**
 * An id typed by a cast instead of decoded with its schema (`Id("msg")`): `as X["id"]` or
 * `as X.Y["channel_id"]` (a member named `id` or `..._id`), or `` as `cnt_${string}` ``.
 */
const ID_CASTS = [
  /\bas\s+[A-Za-z_$][\w$.]*\[\s*(["'])(?:\w*_)?id\1\s*\]/g,
  /\bas\s+`[a-z]+_\$\{string\}`/g
]

/**
 * The lines (1-based) of `file` that cast an id (`as X["id"]`, `as X["contact_id"]`,
 * `` as `cnt_${string}` ``, in code: not in a comment or a string).
 */
export const idCastsOf = (file: SourceFile): ReadonlyArray<number> => {
  const lines = file.text.split("\n")
  const code = codeOf(file.text).split("\n")
  const found: Array<number> = []
  lines.forEach((line, index) => {
    const inCode = ID_CASTS.some((pattern) =>
      [...line.matchAll(pattern)].some((match) => code[index]!.startsWith("as", match.index))
    )
    if (inCode) found.push(index + 1)
  })
  return found
}

/**
 * The names of the groups a file declares (`HttpApiGroup.make` in a contract file) or handles
 * (`HttpApiBuilder.group(Api, ...)` in a handler file): found in the code only (not in comments or strings),
 * the name read from the source at the same place.
 */
const groupsOf = (file: SourceFile, call: "contract" | "handlers") => {
  const code = codeOf(file.text)
  const names: Array<string> = []
  const pattern = call === "contract"
    ? /\bHttpApiGroup\.make\(\s*/g
    : /\bHttpApiBuilder\.group\(\s*[\w$.]+\s*,\s*/g
  for (const match of code.matchAll(pattern)) {
    const name = /^["']([^"']*)["']/.exec(file.text.slice(match.index + match[0].length))?.[1]
    names.push(name ?? "?")
  }
  return names
}

/** Where a contract file's handlers live: `packages/api/src/XApi.ts` -> `services/api/src/handlers/XHandlers.ts` */
const handlerFileOf = (contractPath: string) =>
  contractPath.replace(/^packages\/api\/src\/(\w+)Api\.ts$/, "services/api/src/handlers/$1Handlers.ts")

/**
 * Violations of the source rules: no `any` and no id cast in `packages/*\/src`
 * and `services/*\/src`, the line limit in `packages/*\/src`, namespaces only in the barrels of `NAMESPACE_BARRELS`, one
 * `HttpApiGroup` per contract file of `packages/api/src`, its class named after the file, and one
 * `HttpApiBuilder.group` per handler file of `services/api/src`, the file named after the contract
 * file of its group (`XApi.ts` -> `handlers/XHandlers.ts`).
 */
export const checkSources = (workspace: ReadonlyArray<WorkspacePackage>): ReadonlyArray<string> => {
  const violations: Array<string> = []
  /** group name -> the handler file it belongs in, from the contract files */
  const handlerFiles = new Map<string, string>()
  for (const file of workspace.find((pkg) => pkg.dir === "packages/api")?.files ?? []) {
    const groups = groupsOf(file, "contract")
    if (groups.length === 1) handlerFiles.set(groups[0]!, handlerFileOf(file.path))
  }
  for (const pkg of workspace) {
    if (!pkg.dir.startsWith("packages/") && !pkg.dir.startsWith("services/")) continue
    for (const file of pkg.files) {
      const lines = file.text.split("\n")
      if (lines[lines.length - 1] === "") lines.pop()
      codeOf(file.text).split("\n").forEach((line, index) => {
        if (ANY.test(line)) {
          violations.push(
            `${file.path}:${index + 1}: uses \`any\` (give it a type; see docs/ARCHITECTURE.md "Architecture")`
          )
        }
      })
      if (pkg.dir === "packages/db" && !CATALOG_READERS.has(file.path) && !file.path.includes("/migrations/")) {
        codeOf(file.text).split("\n").forEach((line, index) => {
          if (ASSERTED_ROWS.test(line)) {
            violations.push(
              `${file.path}:${
                index + 1
              }: asserts a row type (sql<Row>): decode the rows with a schema (Rows.decodeRows; docs/ARCHITECTURE.md "Rows decode to domain types")`
            )
          }
        })
      }
      for (const line of idCastsOf(file)) {
        violations.push(
          `${file.path}:${line}: casts an id (as X["id"], as \`x_\${string}\`): decode it where it enters (a row's schema, the contract's IdRef) or check it with Ids.isId on a hot path (docs/ARCHITECTURE.md "Rows decode to domain types")`
        )
      }
      const groups = pkg.dir === "packages/api" ? groupsOf(file, "contract").length : 0
      if (groups > 1) {
        violations.push(
          `${file.path}: ${groups} HttpApiGroups, one per contract file (a file of its own for each group)`
        )
      }
      if (groups === 1) {
        const named = /\bclass\s+(\w+)\s+extends\s+HttpApiGroup\.make\(/.exec(codeOf(file.text))?.[1]
        const basename = /(\w+)\.ts$/.exec(file.path)?.[1]
        if (named !== undefined && named !== basename) {
          violations.push(
            `${file.path}: its group's class is ${named}; name it ${basename}, after its file (XApi.ts exports XApi)`
          )
        }
      }
      if (NAMESPACE_BARRELS.has(pkg.name) && file.path === `${pkg.dir}/src/index.ts`) {
        codeOf(file.text).split("\n").forEach((line, index) => {
          if (/^\s*export\s+(\*\s+from|(type\s+)?\{)/.test(line)) {
            violations.push(
              `${file.path}:${
                index + 1
              }: a flat export; this barrel exports namespaces only (export * as X from "./X.js")`
            )
          }
        })
      }
      if (pkg.dir === "services/api") {
        const handled = groupsOf(file, "handlers")
        if (handled.length > 1) {
          violations.push(
            `${file.path}: ${handled.length} HttpApiBuilder.groups, one per handler file (XApi.ts -> handlers/XHandlers.ts)`
          )
        } else if (handled.length === 1 && handlerFiles.size > 0) {
          const expected = handlerFiles.get(handled[0]!)
          if (expected !== file.path) {
            violations.push(
              `${file.path}: handles group "${handled[0]}", whose handlers belong in ${
                expected ?? "the handler file named after its contract file"
              } (XApi.ts -> handlers/XHandlers.ts)`
            )
          }
        }
      }
      if (lines.length > HARD_MAX_LINES) {
        violations.push(
          `${file.path}: ${lines.length} lines, over ${HARD_MAX_LINES}: split it by job (docs/ARCHITECTURE.md "Architecture")`
        )
      } else if (lines.length > MAX_LINES && pkg.dir.startsWith("packages/")) {
        const header = /^\s*\/\*\*?([\s\S]*?)\*\//.exec(file.text)?.[1] ?? ""
        if (!/^\s*\*?\s*Over 350 lines\b/m.test(header)) {
          violations.push(
            `${file.path}: ${lines.length} lines, over ${MAX_LINES} without a header line saying why ("Over 350 lines ...")`
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
  const violations = [...check(workspace), ...checkSources(workspace)]
  if (violations.length > 0) {
    console.error(
      `check-deps: ${violations.length} violation(s) of the package rules (docs/ARCHITECTURE.md "Architecture"):`
    )
    for (const line of violations) console.error(`  ${line}`)
    process.exit(1)
  }
  const files = workspace.reduce((n, pkg) => n + pkg.files.length, 0)
  console.log(
    `check-deps: ${workspace.length} packages, ${files} files: imports declared and downward; no \`any\`, no id cast, no row type asserted in packages/db, no file over ${MAX_LINES} lines unexplained nor over ${HARD_MAX_LINES} at all, namespace barrels, one HttpApiGroup per contract file and one handler file per group`
  )
}
