import { defineConfig } from "vitest/config"

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
    // 2-core machines: a few files at a time keeps Postgres and the event loops responsive.
    // Each file in a fresh worker (vitest's default `isolate`): shared workers were measured and
    // gave no shorter CI run (docs/TESTING.md "How long it takes").
    poolOptions: { forks: { maxForks: 3, minForks: 1 } }
  }
})
