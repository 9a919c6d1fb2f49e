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

/** The node arguments that run `name`, as `npm start` and the image do: its bundle, source maps on. */
export const serviceEntry = (name: ServiceName): ReadonlyArray<string> => {
  const args = nodeArguments(name)
  if (!existsSync(args[args.length - 1]!)) throw new Error(`no build of ${name}: run npm run build`)
  return args
}
