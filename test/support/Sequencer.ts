/**
 * The order the workers take the files in: vitest's own (failed files first; then the longest, once
 * a run has recorded each file's duration in node_modules/.vite; else the largest), with the
 * end-to-end files (`*.e2e.test.ts`, 15-80 s each, two to six service processes apiece) spread out
 * as every third file. Taken last, as vitest's order did on a fresh clone, they ran on after the
 * short files were done; taken first, three ran at once and starved each other of CPU; spread out,
 * two run at a time beside the short files (at most two: `endToEndSlots.ts`).
 */
import type { TestSpecification } from "vitest/node"
import { BaseSequencer } from "vitest/node"

/** Files that start several service processes: the longest of the suite (docs/TESTING.md). */
export const isEndToEnd = (path: string): boolean => /\.e2e\.test\.ts$/.test(path)

/** `endToEnd` as every `every`-th item of `rest`, both in their own order; what is left over at the end. */
export const spreadOut = <A>(endToEnd: ReadonlyArray<A>, rest: ReadonlyArray<A>, every = 3): Array<A> => {
  const out: Array<A> = []
  let e = 0
  let r = 0
  while (e < endToEnd.length || r < rest.length) {
    const turn = out.length % every === 0
    if ((turn && e < endToEnd.length) || r >= rest.length) out.push(endToEnd[e++]!)
    else out.push(rest[r++]!)
  }
  return out
}

export default class EndToEndSpreadOut extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    return spreadOut(sorted.filter((f) => isEndToEnd(f.moduleId)), sorted.filter((f) => !isEndToEnd(f.moduleId)))
  }
}
