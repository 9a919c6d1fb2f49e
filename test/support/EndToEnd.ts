/**
 * The end-to-end files (`*.e2e.test.ts`, 15-90 s each, two to six service processes apiece): the
 * longest of the suite. `vitest.config.ts` runs them in a pool of their own, two at a time, beside
 * the pool of the other files (docs/TESTING.md "How long it takes"). The fault files among them
 * (a process killed or paused, Postgres or Redis down, runners scaled out and in) are a command of
 * their own, `npm run test:faults`, so that `npm test` answers in minutes; `.ci/run` runs both.
 */

/** Where they are, as vitest globs. */
export const endToEndFiles: ReadonlyArray<string> = ["test/**/*.e2e.test.ts"]

/** The fault files among them, as vitest globs (`npm run test:faults`). */
export const faultFiles: ReadonlyArray<string> = [
  "test/chaos*.e2e.test.ts",
  "test/*[fF]ailover.e2e.test.ts",
  "test/paused*.e2e.test.ts",
  "test/scaleRunners.e2e.test.ts"
]

/** Whether `path` is one of the end-to-end files. */
export const isEndToEnd = (path: string): boolean => /\.e2e\.test\.ts$/.test(path)

/** Whether `path` is one of the fault files. */
export const isFault = (path: string): boolean =>
  /(^|\/)test\/(chaos[^/]*|[^/]*[fF]ailover|paused[^/]*|scaleRunners)\.e2e\.test\.ts$/.test(path)
