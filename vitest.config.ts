import { defineConfig } from "vitest/config"
import type { TestProjectInlineConfiguration } from "vitest/config"
import { useCompileCache } from "./test/support/CompileCache.js"
import { endToEndFiles, faultFiles, inProcessFaultFiles, processFiles } from "./test/support/EndToEnd.js"
import { SlowFirstSequencer } from "./test/support/SlowFirst.js"

// every process of the run reuses V8's compiled code (test/support/CompileCache.ts)
useCompileCache()

/** What both projects share (they do not inherit the root's `globalSetup`, which runs once, for the run). */
const common = {
  // what the code under test prints goes to .tmp/test-logs/ unless TEST_LOGS=1 (README "Tests");
  // each file gets back the environment it started with (docs/TESTING.md "How long it takes")
  setupFiles: [
    "./test/support/testLogs.ts",
    "./test/support/fileCpu.ts",
    "./test/support/fileProfile.ts",
    "./test/support/fileEnv.ts",
    "./test/support/effectVitest.ts",
    "./test/support/endToEndSlots.ts"
  ],
  testTimeout: 60_000,
  hookTimeout: 120_000,
  isolate: false
} satisfies TestProjectInlineConfiguration["test"]

/**
 * Workers of the in-process pool. Real mode: 5. Its files wait on Postgres, Redis, sockets and timers
 * more than they compute: with 3 workers `.ci/run`'s `npm test` took 497 s with the two cores 40-60%
 * idle, each worker busy the whole time (docs/TESTING.md "How long it takes"). Embedded mode: 3, its
 * files compute (PGlite runs in the worker) and more workers only share the same two cores.
 */
const realMode = (process.env["TEST_DATABASE_URL"] ?? process.env["DATABASE_URL"] ?? "") !== ""
const forks = realMode ? 5 : 3

export default defineConfig({
  test: {
    globalSetup: ["./test/support/globalSetup.ts"],
    // the longest files start first, also in a fresh clone without vitest's results cache
    sequence: { sequencer: SlowFirstSequencer },
    // The pools' sizes are the run's, not a project's. As many workers are kept as started: with
    // fewer, vitest stopped an idle one at the end and failed the run ("Terminating worker thread").
    poolOptions: {
      // `--no-memory-reducer`: V8 otherwise runs garbage collections while a process idles, to hand
      // memory back; a worker waiting on its app's timers spent 9 ms of CPU a second on them with
      // no test running, none without (docs/TESTING.md "Tests"). The workers keep what they use.
      forks: { maxForks: forks, minForks: forks, isolate: false, execArgv: ["--no-memory-reducer"] },
      threads: { maxThreads: 2, minThreads: 2, isolate: false }
    },
    // Two pools that run side by side, each with workers that run many files one after another
    // (docs/TESTING.md "How long it takes"), so `effect`, the cluster and the app's packages are
    // imported once per worker, not once per file. Each file still gets back its environment
    // (`fileEnv.ts`) and @effect/vitest's methods (`effectVitest.ts`).
    projects: [
      {
        test: {
          ...common,
          name: "in-process",
          include: ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"],
          exclude: [...endToEndFiles, ...processFiles, ...inProcessFaultFiles, "**/node_modules/**"],
          pool: "forks",
          poolOptions: { forks: { isolate: false } }
        }
      },
      {
        // The end-to-end files (15-80 s each, two to six service processes apiece, mostly waiting on
        // leases, retries and timeouts) in a pool of their own with two workers: never more than two
        // at once, and a file waiting for its turn never holds up a worker of the other files
        // (measured in docs/TESTING.md). Worker threads: a second `forks` pool is not possible, one
        // pool per kind. `endToEndSlots.ts` keeps the most timing-bound one alone.
        test: {
          ...common,
          name: "end-to-end",
          // and the files that drive processes (`processFiles`): they wait on them, as these do
          include: [...endToEndFiles, ...processFiles],
          exclude: [...faultFiles, "**/node_modules/**"],
          pool: "threads",
          poolOptions: { threads: { isolate: false } }
        }
      },
      {
        // The fault end-to-end files (a process killed or paused, Postgres or Redis down, runners
        // scaled out and in): `npm run test:faults` runs this project alone, `npm test` the two
        // above (package.json), so that `npm test` answers in minutes; `.ci/run` runs both. Same
        // pool as the end-to-end files: two at a time, `endToEndSlots.ts` keeps the bound.
        test: {
          ...common,
          name: "faults",
          include: [...faultFiles],
          pool: "threads",
          poolOptions: { threads: { isolate: false } }
        }
      },
      {
        // The in-process fault files (a QR channel's Postgres failing behind test/support/PgProxy.ts):
        // `npm run test:faults` with the fault end-to-end files, in the forks of the in-process files
        // (they run the app in the test process, as those do).
        test: {
          ...common,
          name: "faults-in-process",
          include: [...inProcessFaultFiles],
          pool: "forks",
          poolOptions: { forks: { isolate: false } }
        }
      }
    ]
  }
})
