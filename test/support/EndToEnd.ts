/**
 * The end-to-end files (`*.e2e.test.ts`, 15-90 s each, two to six service processes apiece): the
 * longest of the suite. `vitest.config.ts` runs them in a pool of their own, two at a time, beside
 * the pool of the other files (docs/TESTING.md "How long it takes").
 */

/** Where they are, as vitest globs. */
export const endToEndFiles: ReadonlyArray<string> = ["test/**/*.e2e.test.ts"]

/** Whether `path` is one of them. */
export const isEndToEnd = (path: string): boolean => /\.e2e\.test\.ts$/.test(path)
