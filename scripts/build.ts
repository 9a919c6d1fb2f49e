/**
 * `npm run build`: every service (`services/<name>/src/main.ts`) bundled by esbuild into one file,
 * `dist/<name>.mjs`, with the workspace packages and the npm dependencies it imports, and its
 * source map beside it (`dist/<name>.mjs.map`; run with `node --enable-source-maps` and a stack
 * trace names the TypeScript files and lines). The one definition of the production build:
 * `npm start`, the image (Dockerfile) and the test suite's service processes
 * (test/support/globalSetup.ts, `serviceEntry`) all run these files.
 *
 * Left outside the bundles and loaded from node_modules as they are (`external`): native modules,
 * packages that read their own files at run time (the embedded database's WebAssembly), and
 * Baileys, whose one module instance the QR end-to-end seam (`test/qr/trustFakeWhatsApp.ts`,
 * preloaded through tsx) must share with the service to make it trust the fake WhatsApp server.
 * The console (the api's web page, TypeScript on the typed client) is bundled for the browser into
 * `dist/console/` (scripts/build-console.ts) when a service that serves it is built;
 * services/api/src/Console.ts serves that folder.
 *
 * `--if-stale` (`npm start`'s `prestart`, the test suite's global setup) builds a service only when
 * a file its bundle was made of changed since its last build (`dist/<name>.build.json` lists them
 * with their modification times), so a second start costs a fraction of a second, not a build;
 * `npm start` builds the one service it runs. Each file is
 * written under a temporary name and renamed into place: a process starting from `dist/` while
 * another builds it finds either the old file or the new one, never half of one.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { buildConsole, isConsoleFresh } from "./build-console.js"

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
export const dist = join(root, "dist")

export type ServiceName = "api" | "runner" | "standalone" | "admin"
export const services: ReadonlyArray<ServiceName> = ["api", "runner", "standalone", "admin"]

/** Not bundled: native bindings, and packages that find their own files through their location. */
export const external: ReadonlyArray<string> = [
  "@node-rs/*",
  "msgpackr",
  "msgpackr-extract",
  "@electric-sql/pglite",
  "@electric-sql/pglite/*",
  "@electric-sql/pglite-socket",
  "baileys",
  "pg-native"
]

/** The node arguments that run a built service: source maps on, so stack traces name the sources. */
export const nodeArguments = (name: ServiceName, dir: string = dist): ReadonlyArray<string> => [
  "--enable-source-maps",
  join(dir, `${name}.mjs`)
]

/** `dist/<name>.build.json`: what a bundle was made of (paths from the root, modification times). */
interface Manifest {
  readonly inputs: Record<string, number>
}
const manifestPath = (name: ServiceName, dir: string) => join(dir, `${name}.build.json`)
const thisFile = fileURLToPath(import.meta.url)

const writeAtomically = (path: string, contents: Uint8Array | string) => {
  mkdirSync(dirname(path), { recursive: true })
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, contents)
  renameSync(temporary, path)
}

/** The services that serve the console. */
const servesConsole = (name: ServiceName) => name === "api" || name === "standalone"

/** True when `dir` holds `name`'s bundle made from the files as they are now. */
export const isFresh = (name: ServiceName, dir: string = dist): boolean => {
  if (!existsSync(join(dir, `${name}.mjs`))) return false
  try {
    const { inputs } = JSON.parse(readFileSync(manifestPath(name, dir), "utf8")) as Manifest
    return Object.entries(inputs).every(([path, mtime]) => statSync(join(root, path)).mtimeMs === mtime)
  } catch {
    return false // no manifest, an input is gone, or the manifest is not ours
  }
}

/** Builds one service into `dir` (default `dist/`): its bundle, its source map, its manifest. */
export const buildService = async (name: ServiceName, dir: string = dist): Promise<void> => {
  // loaded here, not at the top: a start that finds its bundle fresh does not load esbuild
  const { build } = await import("esbuild")
  const inputs = new Set<string>([relative(root, thisFile), "package-lock.json"])
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, "services", name, "src", "main.ts")],
    outfile: join(dir, `${name}.mjs`),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: [...external],
    sourcemap: "linked",
    // the map names the sources by path and does not carry them: smaller, and a stack trace only needs the lines
    sourcesContent: false,
    // the CommonJS packages in the bundle `require` node's own modules
    banner: {
      js:
        "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);"
    },
    metafile: true,
    write: false,
    logLevel: "warning"
  })
  for (const file of result.outputFiles) writeAtomically(file.path, file.contents)
  for (const input of Object.keys(result.metafile.inputs)) inputs.add(input)
  const manifest: Manifest = {
    inputs: Object.fromEntries([...inputs].sort().map((path) => [path, statSync(join(root, path)).mtimeMs]))
  }
  writeAtomically(manifestPath(name, dir), JSON.stringify(manifest, null, 1))
}

/**
 * The embedded database's migrated template, `dist/embedded-template.tar.gz`
 * (packages/db/src/EmbeddedTemplate.ts): what a first start on an empty `DATA_DIR` loads instead
 * of creating a database (initdb and every migration, 15-40 s, then one Postgres start). Made from
 * the migrations and the PGlite version, which its manifest lists.
 */
export const TEMPLATE = "embedded-template.tar.gz"
const templateManifest = (dir: string) => join(dir, "embedded-template.build.json")
const templateInputs = (): ReadonlyArray<string> => {
  const db = join("packages", "db", "src")
  return [
    relative(root, thisFile),
    "package-lock.json",
    join(db, "Database.ts"),
    join(db, "EmbeddedTemplate.ts"),
    join(db, "Migrations.ts"),
    // the migrations to partitions and every start's months ahead run its statements
    join(db, "Partitions.ts"),
    ...readdirSync(join(root, db, "migrations")).map((file) => join(db, "migrations", file))
  ].sort()
}
/** The services that run on the embedded database (and so load the template). */
const usesTemplate = (name: ServiceName) => name === "standalone" || name === "admin"

/** True when `dir` holds the template made from the migrations as they are now. */
export const isTemplateFresh = (dir: string = dist): boolean => {
  if (!existsSync(join(dir, TEMPLATE))) return false
  try {
    const { inputs } = JSON.parse(readFileSync(templateManifest(dir), "utf8")) as Manifest
    const now = templateInputs()
    return Object.keys(inputs).length === now.length &&
      now.every((path) => inputs[path] === statSync(join(root, path)).mtimeMs)
  } catch {
    return false
  }
}

/** Makes the template in `dir` (15-40 s: what a first start without one costs). */
export const buildTemplate = async (dir: string = dist): Promise<void> => {
  const inputs = templateInputs()
  const mtimes = Object.fromEntries(inputs.map((path) => [path, statSync(join(root, path)).mtimeMs]))
  // loaded here: a start that finds everything fresh does not load the database code
  const { EmbeddedTemplate } = await import("@switchboard/db")
  await EmbeddedTemplate.make(join(dir, TEMPLATE), { compression: "gzip" })
  writeAtomically(templateManifest(dir), JSON.stringify({ inputs: mtimes }, null, 1))
}

/**
 * Builds each of `names` that is not fresh in `dir`, and the template when one of them runs on the
 * embedded database and `dir` has none; the ones it built. A template older than the migrations is
 * left as it is here (a start on an empty `DATA_DIR` applies the migrations it lacks, and a start
 * on an existing one never reads it): only `npm run build` (`buildAll`) remakes it.
 */
export const buildIfStale = async (
  names: ReadonlyArray<ServiceName> = services,
  dir: string = dist
): Promise<ReadonlyArray<string>> => {
  const stale = names.filter((name) => !isFresh(name, dir))
  const consoleStale = names.some(servesConsole) && !isConsoleFresh(dir)
  const template = names.some(usesTemplate) && !existsSync(join(dir, TEMPLATE))
  await Promise.all([
    ...stale.map((name) => buildService(name, dir)),
    ...(consoleStale ? [buildConsole(dir)] : []),
    ...(template ? [buildTemplate(dir)] : [])
  ])
  return [...stale.map((name) => `${name}.mjs`), ...(consoleStale ? ["console/"] : []), ...(template ? [TEMPLATE] : [])]
}

/** `npm run build`: `names`, and the template unless it is fresh; the files it built. */
export const buildAll = async (
  names: ReadonlyArray<ServiceName> = services,
  dir: string = dist
): Promise<ReadonlyArray<string>> => {
  const template = names.some(usesTemplate) && !isTemplateFresh(dir)
  const withConsole = names.some(servesConsole)
  await Promise.all([
    ...names.map((name) => buildService(name, dir)),
    ...(withConsole ? [buildConsole(dir)] : []),
    ...(template ? [buildTemplate(dir)] : [])
  ])
  return [...names.map((name) => `${name}.mjs`), ...(withConsole ? ["console/"] : []), ...(template ? [TEMPLATE] : [])]
}

// `node --import tsx scripts/build.ts [--if-stale] [service ...]`: every service unless some are named
if (process.argv[1] !== undefined && resolve(process.argv[1]) === thisFile) {
  const started = Date.now()
  const args = process.argv.slice(2)
  const named = args.filter((a) => !a.startsWith("--"))
  const unknown = named.filter((a) => !(services as ReadonlyArray<string>).includes(a))
  if (unknown.length > 0) {
    console.error(`usage: build.ts [--if-stale] [${services.join("|")} ...] (unknown: ${unknown.join(", ")})`)
    process.exit(64)
  }
  const names = named.length === 0 ? services : (named as ReadonlyArray<ServiceName>)
  const built = args.includes("--if-stale") ? await buildIfStale(names) : await buildAll(names)
  if (built.length > 0) {
    console.log(`built ${built.map((file) => `dist/${file}`).join(", ")} in ${Date.now() - started} ms`)
  }
}
