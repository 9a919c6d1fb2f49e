import { defineConfig } from "vitest/config"

// real Postgres and Redis (packages/db/src/testing `testDatabaseUrl`), else the embedded database
const realMode = [process.env["TEST_DATABASE_URL"], process.env["DATABASE_URL"]].some((url) =>
  url !== undefined && url.trim() !== ""
)

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["./test/support/globalSetup.ts"],
    // what the code under test prints goes to .tmp/test-logs/ unless TEST_LOGS=1 (README "Tests");
    // each file gets back the environment it started with (docs/TESTING.md "How long it takes")
    setupFiles: ["./test/support/testLogs.ts", "./test/support/fileEnv.ts", "./test/support/effectVitest.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Embedded mode: three workers that each run many files, so `effect`, the cluster and the app's
    // packages are imported three times, not once per file: 5 min 37 s and 585 s of CPU for the
    // embedded suite against 9 min 45 s and 1,091 s with a fresh worker per file (docs/TESTING.md
    // "How long it takes"). Each file still gets back its environment (`fileEnv.ts`) and
    // @effect/vitest's methods (`effectVitest.ts`). As many workers are kept as started: with fewer,
    // vitest stopped an idle one at the end and failed the run ("Terminating worker thread").
    // Real mode keeps a fresh worker per file: its wall clock is the multi-process end-to-end
    // files' own, and shared workers were measured to give it no shorter run.
    isolate: realMode,
    // 2-core machines: a few files at a time keeps Postgres and the event loops responsive.
    poolOptions: { forks: { maxForks: 3, minForks: realMode ? 1 : 3, isolate: realMode } }
  }
})
