/**
 * The order the workers take the files in. Once a run has recorded every file's duration (vitest's
 * cache in node_modules/.vite), vitest's own order: failed files first, then the longest. Without
 * it (a fresh clone, as CI runs), vitest would take the largest files first, and the end-to-end
 * files, short to read but 30-100 s each, came last and ran on while the other workers sat idle:
 * they go first here, so the short files fill in around them.
 */
import type { TestSpecification } from "vitest/node"
import { BaseSequencer } from "vitest/node"

/** Files that start several service processes: the longest of the suite (docs/TESTING.md). */
export const isEndToEnd = (moduleId: string): boolean => /\.e2e\.test\.ts$/.test(moduleId)

export default class EndToEndFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const known = files.every((file) =>
      this.ctx.cache.getFileTestResults(`${file.project.name}:${relativeTo(this.ctx.config.root, file.moduleId)}`)
        !== undefined
    )
    if (known) return sorted
    return [...sorted.filter((f) => isEndToEnd(f.moduleId)), ...sorted.filter((f) => !isEndToEnd(f.moduleId))]
  }
}

const relativeTo = (root: string, path: string) => (path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path)
