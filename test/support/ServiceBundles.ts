/**
 * The service processes the tests start (`Processes.ts` `startService`, `adminRun`) run the
 * production build: `npm run build`'s bundles in `dist/` (scripts/build.ts, the one definition),
 * built by the global setup when a source changed since the last build (`globalSetup.ts`), so
 * `.ci/run`, which builds first, starts every test process from the build it made. An api node
 * bundled answered /health 1.5 s after its start on 1.9 s of CPU, against 4.7 s and 5.9 s through
 * tsx (docs/TESTING.md, "Service processes start from a bundle"); the end-to-end files start 2 to
 * 6 such processes each.
 */
import { existsSync } from "node:fs"
import { buildIfStale, nodeArguments } from "../../scripts/build.js"
import type { ServiceName } from "../../scripts/build.js"

export type { ServiceName }

/** Builds `dist/` unless it is fresh (the test run's global setup); says which it did. */
export const buildServiceBundles = () => buildIfStale()

/**
 * Whether the test processes load their bundle's source map (`TEST_SOURCE_MAPS=1`). Off by default:
 * with `--enable-source-maps` a process spends about 0.3 s of CPU more to start (measured on the
 * operator CLI's `--help`: 0.88 s against 0.55 s, Node 24), most of it decoding the whole map the
 * first time a stack is read, which Effect does as it loads. The suite starts about 70 such
 * processes and the fault files as many again (docs/TESTING.md "How long it takes"). Their stack
 * traces then name places in `dist/<name>.mjs`; set it to read them in the sources.
 */
export const withSourceMaps = (): boolean => process.env["TEST_SOURCE_MAPS"] === "1"

/**
 * The node arguments that run `name`: its production bundle, as `npm start` and the image run it,
 * without `--enable-source-maps` unless `withSourceMaps()`.
 */
export const serviceEntry = (name: ServiceName): ReadonlyArray<string> => {
  const args = nodeArguments(name)
  if (!existsSync(args[args.length - 1]!)) throw new Error(`no build of ${name}: run npm run build`)
  return withSourceMaps() ? args : args.filter((arg) => arg !== "--enable-source-maps")
}
