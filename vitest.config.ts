import { configDefaults, defineConfig } from "vitest/config"

/**
 * Files whose `TestClock` stops being the clock their effects see once another file ran in the
 * same worker (`testClock.adjust is not a function`; cause not found yet, docs/TESTING.md "How long it
 * takes"): they run in a worker of their own.
 */
const OWN_WORKER = [
  "packages/providers/test/QrRecipientCheck.test.ts",
  "services/api/test/RateLimits.test.ts",
  "services/api/test/Sse.test.ts"
]

export default defineConfig({
  test: {
    // what the code under test prints goes to .tmp/test-logs/ unless TEST_LOGS=1 (README "Tests");
    // each file gets back the environment it started with (files share workers, below)
    setupFiles: ["./test/support/testLogs.ts", "./test/support/fileEnv.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // 2-core machines: a few files at a time keeps Postgres and the event loops responsive.
    // isolate: false: a worker imports effect and the app's packages once, not once per file
    // (docs/TESTING.md "How long it takes"). minForks = maxForks: with fewer, vitest 3.2 ends a
    // green run with exit code 1 ("Terminating worker thread", vitest issue #8564).
    poolOptions: { forks: { maxForks: 3, minForks: 3, isolate: false } },
    projects: [
      {
        extends: true,
        test: {
          name: "shared",
          include: ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...OWN_WORKER],
          globalSetup: ["./test/support/globalSetup.ts"]
        }
      },
      // the threads pool isolates each file (forks' isolate is one setting for the whole run)
      { extends: true, test: { name: "own-worker", include: OWN_WORKER, pool: "threads" } }
    ]
  }
})
