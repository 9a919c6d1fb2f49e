/**
 * The service processes the tests start (`Processes.ts` `startService`, `adminRun`), each built
 * once per test run (`globalSetup.ts`, into `.tmp/services-*`, removed at its end) by esbuild from `services/<name>/src/main.ts` into one file
 * with the workspace packages and the npm dependencies it imports. The same sources as
 * `npm start`: what a bundle saves is resolving and loading a few thousand modules one by one
 * through tsx's hooks. On the 2-core machine an api node answered /health 1.5 s after its start on
 * 1.9 s of CPU, against 4.7 s and 5.9 s through tsx (docs/TESTING.md, "Service processes start from a bundle"); the
 * end-to-end files start 2 to 6 such processes each.
 *
 * Left outside the bundle and loaded from node_modules as they are: native modules, packages that
 * read their own files at run time (the embedded database's WebAssembly), and Baileys, whose one
 * module instance the QR end-to-end seam (`test/qr/trustFakeWhatsApp.ts`, preloaded through tsx)
 * must share with the service to make it trust the fake WhatsApp server.
 */
import { build } from "esbuild"
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..", "..")

export type ServiceName = "api" | "runner" | "standalone" | "admin"
const services: ReadonlyArray<ServiceName> = ["api", "runner", "standalone", "admin"]

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

/** Set by `buildServiceBundles` for the test workers, which inherit the environment. */
const envKey = "SWITCHBOARD_SERVICE_BUNDLES"

/**
 * Builds every service's bundle into a directory of this run's own (two runs in one checkout do not
 * overwrite each other's files) and tells the test workers where they are; the returned function
 * removes them.
 */
export const buildServiceBundles = async (): Promise<() => void> => {
  mkdirSync(join(root, ".tmp"), { recursive: true })
  const dir = mkdtempSync(join(root, ".tmp", "services-"))
  await Promise.all(services.map((name) =>
    build({
      entryPoints: [join(root, "services", name, "src", "main.ts")],
      outfile: join(dir, `${name}.mjs`),
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      external: [...external],
      // the CommonJS packages in the bundle `require` node's own modules
      banner: {
        js:
          "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);"
      },
      logLevel: "warning"
    })
  ))
  process.env[envKey] = dir
  return () => rmSync(dir, { recursive: true, force: true })
}

/** The node arguments that run `name`: its bundle when this run built one, else its sources through tsx. */
export const serviceEntry = (name: ServiceName): ReadonlyArray<string> => {
  const dir = process.env[envKey]
  const bundle = dir === undefined ? undefined : join(dir, `${name}.mjs`)
  return bundle !== undefined && existsSync(bundle)
    ? [bundle]
    : ["--import", "tsx", join(root, "services", name, "src", "main.ts")]
}
