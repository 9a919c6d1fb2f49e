import { defineConfig } from "vitest/config"
import EndToEndSpreadOut from "./test/support/Sequencer.js"

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["./test/support/globalSetup.ts"],
    // what the code under test prints goes to .tmp/test-logs/ unless TEST_LOGS=1 (README "Tests");
    // each file gets back the environment it started with (docs/TESTING.md "How long it takes")
    setupFiles: [
      "./test/support/testLogs.ts",
      "./test/support/fileEnv.ts",
      "./test/support/effectVitest.ts",
      "./test/support/endToEndSlots.ts"
    ],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Three workers that each run many files, in both modes, so `effect`, the cluster and the app's
    // packages are imported three times, not once per file: 5 min 37 s and 585 s of CPU for the
    // embedded suite against 9 min 45 s and 1,091 s with a fresh worker per file (docs/TESTING.md
    // "How long it takes"). Each file still gets back its environment (`fileEnv.ts`) and
    // @effect/vitest's methods (`effectVitest.ts`). As many workers are kept as started: with fewer,
    // vitest stopped an idle one at the end and failed the run ("Terminating worker thread").
    isolate: false,
    // 2-core machines: a few files at a time keeps Postgres and the event loops responsive.
    poolOptions: { forks: { maxForks: 3, minForks: 3, isolate: false } },
    // the end-to-end files spread out among the others, two at most at a time (test/support/endToEndSlots.ts)
    sequence: { sequencer: EndToEndSpreadOut }
  }
})
