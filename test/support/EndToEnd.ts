/**
 * Which test files run where. The end-to-end files (`*.e2e.test.ts`, 15-90 s each, two to six
 * service processes apiece) are the longest of the suite: `vitest.config.ts` runs them in a pool of
 * their own, two at a time, beside the pool of the other files (docs/TESTING.md "How long it
 * takes"). The fault files are a command of their own, `npm run test:faults`, so that `npm test`
 * answers in minutes; `.ci/run` runs both. They are the end-to-end files whose point is a fault (a
 * process killed or paused, Postgres or Redis down, runners scaled out and in) and the in-process
 * files whose point is the app's Postgres failing under a QR channel (behind `test/support/PgProxy.ts`:
 * an outage, a connection killed as a write lands), which run in the in-process files' pool.
 */

/** Where the end-to-end files are, as vitest globs. */
export const endToEndFiles: ReadonlyArray<string> = ["test/**/*.e2e.test.ts"]

/**
 * The files that drive processes rather than an app in the test's own process: `npm start` and
 * its stop, the operator CLI, a production-configured node, the build and the packed SDK, the
 * image's entry script. They run in the end-to-end files' pool (two at a time), which is otherwise
 * idle once those are done: in a run of 2026-11-30 (324 s) the end-to-end files had all ended at
 * 114 s, while these held in-process workers for about 300 s between them, mostly waiting on their
 * processes (docs/TESTING.md "How long it takes"). Vitest globs, paths from the root. Not
 * `test/npmStartStop.test.ts`: in this pool its Ctrl-C test saw @effect/cluster warn "No healthy
 * runners available" during the stop in 3 of 5 full runs (2026-11-30), in the in-process pool in
 * none of 6 that day; the warning at a stop under load is not fixed.
 */
export const processFiles: ReadonlyArray<string> = [
  "test/productionConfig.test.ts",
  "test/sdkReadme.test.ts",
  "test/sdkPackage.test.ts",
  "test/quickstart.test.ts",
  "test/compose.test.ts",
  "test/listenFailure.test.ts",
  "test/adminLists.test.ts",
  "test/consoleBuild.test.ts",
  "test/firstStart.test.ts"
]

/** Whether `path` is one of `processFiles`. */
export const isProcessFile = (path: string): boolean =>
  processFiles.some((file) => path === file || path.endsWith(`/${file}`))

/** The fault files among the end-to-end files, as vitest globs (`npm run test:faults`). */
export const faultFiles: ReadonlyArray<string> = [
  "test/chaos*.e2e.test.ts",
  "test/*[fF]ailover.e2e.test.ts",
  "test/paused*.e2e.test.ts",
  "test/scaleRunners.e2e.test.ts"
]

/** The in-process fault files, as vitest globs (`npm run test:faults`): a QR channel's database failing. */
export const inProcessFaultFiles: ReadonlyArray<string> = ["test/qr*Outage.test.ts", "test/qrInputBound.test.ts"]

/** Whether `path` is one of the end-to-end files. */
export const isEndToEnd = (path: string): boolean => /\.e2e\.test\.ts$/.test(path)

/** Whether `path` is one of the fault files, end-to-end or in-process. */
export const isFault = (path: string): boolean =>
  /(^|\/)test\/(chaos[^/]*|[^/]*[fF]ailover|paused[^/]*|scaleRunners)\.e2e\.test\.ts$/.test(path) ||
  /(^|\/)test\/(qr[^/]*Outage|qrInputBound)\.test\.ts$/.test(path)
