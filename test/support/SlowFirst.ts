/**
 * The order the test files start in: the longest first, so that no long file starts last and runs
 * on alone while the other workers idle (longest-processing-time-first; docs/TESTING.md "How long
 * it takes"). Vitest orders by each file's duration in its results cache when it has one (a
 * checkout that ran the suite before), and otherwise by file size, which a fresh clone (CI) gets:
 * there `test/firstStart.test.ts` (small, 155 s at a full run's load) started at 635 s of a 970 s
 * run and `test/adminLists.test.ts` at 888 s. The files below, measured longest in a full real-mode
 * run (2026-11-29), start first in this order; the others follow in vitest's own order. A file
 * missing from the list only starts later; `test/testHarness.test.ts` checks that each one exists.
 */
import type { TestSpecification } from "vitest/node"
import { BaseSequencer } from "vitest/node"

/** Longest first, as measured (`npm test` in real mode, its JSON report's file durations). */
export const slowFiles: ReadonlyArray<string> = [
  "test/qr.test.ts",
  "test/consolePolish.test.ts",
  "test/npmStartStop.test.ts",
  "test/qrDatabaseOutage.test.ts",
  "test/qrRestrictions.test.ts",
  "test/contractFuzz.test.ts",
  "test/productionConfig.test.ts",
  "test/sdkReadme.test.ts",
  "test/sdkPackage.test.ts",
  "test/consoleFirstHour.test.ts",
  "test/webhooks.test.ts",
  "test/firstStart.test.ts",
  "test/mediaUploadForms.test.ts",
  "test/qrSafety.test.ts",
  "test/qr/QrConnection.test.ts",
  "test/compose.test.ts",
  "test/console.test.ts",
  "test/conversations.test.ts",
  "test/messages.test.ts",
  "test/listenFailure.test.ts",
  "test/adminLists.test.ts",
  "test/quickstart.test.ts",
  "test/consoleBuild.test.ts",
  "test/qrOfflineQueue.test.ts",
  "test/apiExamples.test.ts",
  "test/qrPairingCode.test.ts",
  "test/qr/QrSocketLeak.test.ts",
  "test/consoleMediaTypes.test.ts",
  "test/noEcho.test.ts",
  "test/consoleInbox.test.ts",
  "test/qrCalls.test.ts",
  "test/qrLidIdentity.test.ts",
  "test/topology.e2e.test.ts",
  "test/keyCacheNodes.e2e.test.ts",
  "test/prometheus.e2e.test.ts"
]

/** Where `moduleId` (an absolute path) stands in `slowFiles` (after every listed file when not in it). */
export const rank = (moduleId: string): number => {
  const at = slowFiles.findIndex((file) => moduleId.endsWith(`/${file}`))
  return at < 0 ? slowFiles.length : at
}

/** Vitest's order, then the listed files moved to the front in the list's order (the sort is stable). */
export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    return (await super.sort(files)).sort((a, b) => rank(a.moduleId) - rank(b.moduleId))
  }
}
