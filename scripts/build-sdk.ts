/**
 * Builds `@switchboard/sdk` as a package anyone can install from npm (packages/sdk/README.md
 * "Publish"): plain JavaScript (ES modules) with `.d.ts` declarations, so a user runs it on
 * Node 20 without a TypeScript loader or bundler.
 *
 * The SDK is derived from the contract in `packages/api` and the wire schemas in
 * `packages/domain`, which are private workspace packages. They are compiled alongside it and
 * their bare `@switchboard/*` imports are rewritten to relative paths, so the tarball carries one
 * copy of the contract and depends only on public packages (versions taken from the workspace,
 * exactly as the server runs them).
 *
 *   node --import tsx scripts/build-sdk.ts          # -> packages/sdk/dist (a package directory)
 *   node --import tsx scripts/build-sdk.ts --pack   # and `npm pack` it: prints the tarball's path
 */
import { execFileSync } from "node:child_process"
import { cpSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const sdkDir = join(root, "packages/sdk")
const defaultDist = join(sdkDir, "dist")

/** Where each private workspace package's compiled entry lands inside `lib`. */
const inlinedEntries: Record<string, string> = {
  "@switchboard/api": "api/src/index.js",
  "@switchboard/domain": "domain/src/index.js"
}

const readJson = (path: string): Record<string, unknown> => JSON.parse(readFileSync(path, "utf8"))

const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : [path]
  })

const relativeSpecifier = (from: string, to: string) => {
  const path = relative(dirname(from), to).split("\\").join("/")
  return path.startsWith(".") ? path : `./${path}`
}

/** `from "@switchboard/api"` -> `from "../../api/src/index.js"` (JS and declarations alike). */
const rewriteImports = (lib: string) => (file: string) => {
  const source = readFileSync(file, "utf8")
  const rewritten = source.replace(
    /(from\s+|import\s*\(\s*)"(@switchboard\/[a-z-]+)"/g,
    (match, prefix: string, specifier: string) => {
      const entry = inlinedEntries[specifier]
      if (entry === undefined) {
        throw new Error(`${relative(root, file)} imports ${specifier}, which the SDK cannot ship`)
      }
      const target = join(lib, entry)
      const path = file.endsWith(".d.ts") ? target.replace(/\.js$/, ".d.ts") : target
      return `${prefix}"${relativeSpecifier(file, path).replace(/\.d\.ts$/, ".js")}"`
    }
  )
  if (rewritten !== source) writeFileSync(file, rewritten)
}

/** The public packages the compiled code imports, pinned to the versions the workspace uses. */
const dependenciesOf = (files: ReadonlyArray<string>) => {
  const pinned: Record<string, string> = {
    ...(readJson(join(root, "package.json"))["dependencies"] as Record<string, string>),
    ...(readJson(join(root, "packages/domain/package.json"))["dependencies"] as Record<string, string>)
  }
  const names = new Set<string>()
  for (const file of files.filter((f) => f.endsWith(".js"))) {
    for (const [, specifier] of readFileSync(file, "utf8").matchAll(/from\s+"([^".][^"]*)"/g)) {
      if (specifier!.startsWith("node:")) continue
      const parts = specifier!.split("/")
      names.add(specifier!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!)
    }
  }
  return Object.fromEntries(
    [...names].sort().map((name) => {
      const version = pinned[name]
      if (version === undefined) throw new Error(`the SDK imports ${name}, which the workspace does not pin`)
      return [name, version]
    })
  )
}

/** Compiles into `dist` (replaced): a directory `npm pack` or `npm publish` takes as it is. */
export const build = (dist: string = defaultDist) => {
  const lib = join(dist, "lib")
  rmSync(dist, { recursive: true, force: true })
  const tsc = join(root, "node_modules/typescript/bin/tsc")
  execFileSync(process.execPath, [tsc, "-p", join(sdkDir, "tsconfig.build.json"), "--outDir", lib], {
    stdio: "inherit"
  })
  const files = filesUnder(lib)
  files.forEach(rewriteImports(lib))
  const manifest = readJson(join(sdkDir, "package.json"))
  writeFileSync(
    join(dist, "package.json"),
    JSON.stringify(
      {
        name: manifest["name"],
        version: manifest["version"],
        description: manifest["description"],
        type: "module",
        engines: { node: ">=20" },
        exports: { ".": { types: "./lib/sdk/src/index.d.ts", default: "./lib/sdk/src/index.js" } },
        main: "./lib/sdk/src/index.js",
        types: "./lib/sdk/src/index.d.ts",
        files: ["lib", "README.md"],
        sideEffects: false,
        // a scoped package is private on the registry unless published public
        publishConfig: { access: "public" },
        dependencies: dependenciesOf(files)
      },
      null,
      2
    ) + "\n"
  )
  cpSync(join(sdkDir, "README.md"), join(dist, "README.md"))
  return dist
}

/** `npm pack` of a built `dist` into `into`: returns the tarball's path. */
export const pack = (dist: string, into: string) => {
  const output = execFileSync("npm", ["pack", "--json", "--pack-destination", into], { cwd: dist, encoding: "utf8" })
  const [result] = JSON.parse(output) as Array<{ readonly filename: string }>
  return join(into, result!.filename)
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dist = build()
  console.log(`built ${relative(root, dist)}`)
  if (process.argv.includes("--pack")) console.log(pack(dist, dist))
}
