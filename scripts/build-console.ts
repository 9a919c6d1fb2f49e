/**
 * The console's build (docs/CONSOLE.md "Console"): its TypeScript (`services/api/console/src`,
 * calling the API through the typed client `@switchboard/sdk`, so a contract change breaks
 * `npm run typecheck` and this build) bundled by esbuild for the browser into `dist/console/`,
 * with the page (`index.html`), its style and the pinned QR library (`qrcode-generator`'s one
 * ES module, served as `qrcode.mjs`). Part of `npm run build` (scripts/build.ts), which the test
 * suite's global setup and `npm start` run when a source changed; services/api/src/Console.ts
 * serves the folder.
 *
 * Three entry points, sharing their code through chunks (`chunk-<hash>.mjs`): `app.js` (the page's
 * script), `lib.mjs` (the shared helpers) and `media-types.mjs` (the project's media-type reader,
 * `packages/domain/src/ConsoleMedia.ts`, which tests import in the browser). Only
 * `whatwg-mimetype`'s parser goes in (its `MIMEType` class, not its content sniffer, which the
 * page never runs). Minified, with source maps beside the files (names the TypeScript files).
 *
 *   node --import tsx scripts/build-console.ts           # writes dist/console
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const thisFile = fileURLToPath(import.meta.url)
const source = join(root, "services", "api", "console")
const defaultDist = join(root, "dist")

/** The media-type reader as the build writes it (tests compare it with `buildConsoleMedia()`). */
export const output = join(defaultDist, "console", "media-types.mjs")

const ENTRIES = [
  { in: join(source, "src", "app.ts"), out: "app" },
  { in: join(source, "src", "lib.ts"), out: "lib" },
  { in: join(source, "src", "mediaTypes.ts"), out: "media-types" }
]
/** The page's script keeps the name index.html loads (`app.js`); every other file is an `.mjs`. */
const servedName = (name: string) => name === "app.mjs" ? "app.js" : name

/** Copied as they are: the page, its style, the QR library. */
const staticFiles = (): ReadonlyArray<readonly [from: string, to: string]> => {
  const require = createRequire(join(root, "services", "api", "package.json"))
  return [
    [join(source, "index.html"), "index.html"],
    [join(source, "console.css"), "console.css"],
    [join(dirname(require.resolve("qrcode-generator")), "qrcode.mjs"), "qrcode.mjs"]
  ]
}

/** The workspace packages the page takes code from (their sources). */
const OWN = /[\\/]packages[\\/](domain|api|sdk)[\\/]src[\\/]/
const OURS = Symbol("resolved by console-imports")

interface Built {
  /** file name in `console/` -> contents */
  readonly files: ReadonlyMap<string, Uint8Array>
  /** every source the files were made of, relative to the root */
  readonly inputs: ReadonlyArray<string>
}

/** The console's files, made in memory. */
export const buildConsoleFiles = async (): Promise<Built> => {
  const { build } = await import("esbuild")
  const domain = createRequire(join(root, "packages", "domain", "package.json"))
  const mimeType = domain.resolve("whatwg-mimetype/lib/mime-type.js")
  const outdir = join(root, "dist", "console")
  const result = await build({
    absWorkingDir: root,
    entryPoints: ENTRIES,
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunk-[hash]",
    minify: true,
    sourcemap: "linked",
    sourcesContent: false,
    metafile: true,
    write: false,
    legalComments: "none",
    logLevel: "warning",
    plugins: [{
      name: "console-imports",
      setup(b) {
        // the package's entry also loads its content sniffer; the reader needs the parser only
        b.onResolve({ filter: /^whatwg-mimetype$/ }, () => ({ path: "whatwg-mimetype", namespace: "parser" }))
        b.onLoad({ filter: /.*/, namespace: "parser" }, () => ({
          contents: `import MIMEType from ${JSON.stringify(mimeType)}; export { MIMEType }`,
          resolveDir: root,
          loader: "js"
        }))
        // the SDK's webhook verification (Node's crypto) is not imported by the page: the SDK has no
        // side effects, so the unused module is left out with its import (test/consoleBuild.test.ts
        // checks that no built file imports a Node module)
        b.onResolve({ filter: /^node:/ }, (args) => ({ path: args.path, external: true }))
        // the QR library is served as its own file (`qrcode.mjs`), the pinned package's ES module
        b.onResolve({ filter: /^qrcode-generator$/ }, () => ({ path: "./qrcode.mjs", external: true }))
        // our packages define, they do not act on loading: what the page does not use stays out
        // (the CSV reader, csv-parse, whose module builds Node Buffers as it loads, among them)
        b.onResolve({ filter: /.*/ }, async (args) => {
          if (args.pluginData === OURS || !(OWN.test(args.importer) || args.path.startsWith("@switchboard/"))) {
            return undefined
          }
          const resolved = await b.resolve(args.path, {
            kind: args.kind,
            importer: args.importer,
            resolveDir: args.resolveDir,
            pluginData: OURS
          })
          if (resolved.errors.length > 0 || !OWN.test(resolved.path)) return undefined
          return { path: resolved.path, sideEffects: false }
        })
      }
    }]
  })
  const files = new Map<string, Uint8Array>()
  for (const file of result.outputFiles) {
    files.set(servedName(relative(outdir, file.path)), file.contents)
  }
  const inputs = new Set([relative(root, thisFile), "package-lock.json"])
  for (const input of Object.keys(result.metafile.inputs)) {
    if (!input.includes(":")) inputs.add(input)
  }
  for (const [from, to] of staticFiles()) {
    files.set(to, readFileSync(from))
    inputs.add(relative(root, from))
  }
  return { files, inputs: [...inputs].sort() }
}

/** `media-types.mjs` as the build makes it now. */
export const buildConsoleMedia = async (): Promise<string> =>
  new TextDecoder().decode((await buildConsoleFiles()).files.get("media-types.mjs"))

interface Manifest {
  readonly inputs: Record<string, number>
}
const manifestPath = (dir: string) => join(dir, "console.build.json")

/** True when `dir/console` holds the console made from the files as they are now. */
export const isConsoleFresh = (dir: string = defaultDist): boolean => {
  if (!existsSync(join(dir, "console", "app.js"))) return false
  try {
    const { inputs } = JSON.parse(readFileSync(manifestPath(dir), "utf8")) as Manifest
    return Object.entries(inputs).every(([path, mtime]) => statSync(join(root, path)).mtimeMs === mtime)
  } catch {
    return false
  }
}

/**
 * Writes the console into `dir/console`: each file under a temporary name renamed into place (a
 * server starting meanwhile reads the old file or the new one, never half of one); chunks of an
 * earlier build are removed afterwards.
 */
export const buildConsole = async (dir: string = defaultDist): Promise<void> => {
  const { files, inputs } = await buildConsoleFiles()
  const target = join(dir, "console")
  mkdirSync(target, { recursive: true })
  // chunks first: an entry written before the chunk it imports would load nothing
  const order = [...files.keys()].sort((a, b) => Number(!a.startsWith("chunk-")) - Number(!b.startsWith("chunk-")))
  for (const name of order) {
    const temporary = join(target, `.${name}.${process.pid}.tmp`)
    writeFileSync(temporary, files.get(name)!)
    renameSync(temporary, join(target, name))
  }
  for (const name of readdirSync(target)) {
    if (!files.has(name) && !name.endsWith(".tmp")) rmSync(join(target, name), { force: true })
  }
  const manifest: Manifest = {
    inputs: Object.fromEntries(inputs.map((path) => [path, statSync(join(root, path)).mtimeMs]))
  }
  const temporary = `${manifestPath(dir)}.${process.pid}.tmp`
  writeFileSync(temporary, JSON.stringify(manifest, null, 1))
  renameSync(temporary, manifestPath(dir))
}

if (process.argv[1] && resolve(process.argv[1]) === thisFile) {
  const started = Date.now()
  await buildConsole()
  console.log(`built dist/console in ${Date.now() - started} ms`)
}
