import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["./test/support/globalSetup.ts"],
    // what the code under test prints goes to .tmp/test-logs/ unless TEST_LOGS=1 (README "Tests")
    setupFiles: ["./test/support/testLogs.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // 2-core machines: a few files at a time keeps Postgres and the event loops responsive
    poolOptions: { forks: { maxForks: 3, minForks: 1 } }
  }
})
