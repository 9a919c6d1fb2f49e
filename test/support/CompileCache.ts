/**
 * The V8 compile cache for every Node process of a test run: vitest's own (its end-to-end worker
 * threads run in it), its forked workers, and the service and CLI processes the tests start
 * (`Processes.ts` passes `NODE_COMPILE_CACHE` on). A process then loads the compiled code of a
 * module it loaded before (the services' 4 MB bundles, `effect`, Baileys) instead of compiling it
 * again: 0.47 s against 0.58 s of CPU for the operator CLI's `--help` on Node 24, 1.2 s against
 * 1.45 s for a standalone to answer `/ready` (docs/TESTING.md "Tests"). Node keys each entry by the
 * file's contents and its own version and checks it as it loads it, so a changed build is never
 * run from an old entry. Node 22.1 and later; Node 20 ignores the variable and has no
 * `enableCompileCache`. A `NODE_COMPILE_CACHE` already set is kept: an empty one turns it off.
 */
import * as Module from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** Sets `NODE_COMPILE_CACHE` (unless set) for the processes started from here on, and turns the cache on in this one. */
export const useCompileCache = (): void => {
  process.env["NODE_COMPILE_CACHE"] ??= join(tmpdir(), "switchboard-test", "node-compile-cache")
  const dir = process.env["NODE_COMPILE_CACHE"]
  const enable = (Module as { readonly enableCompileCache?: (dir: string) => unknown }).enableCompileCache
  if (dir !== "" && enable !== undefined) enable(dir)
}

/** `NODE_COMPILE_CACHE` for a child process's clean environment: the run's, when it has one. */
export const compileCacheEnv = (): Record<string, string> => {
  const dir = process.env["NODE_COMPILE_CACHE"]
  return dir === undefined || dir === "" ? {} : { NODE_COMPILE_CACHE: dir }
}
