/** CPU profiles of a stack's processes (the runner's is `CPU.<runner pid>.cpuprofile`). */
import { resolve } from "node:path"

/**
 * Environment that makes every process of a stack write a CPU profile to `dir` when it exits
 * (see CpuProfileHook.mjs; summarise with `node bench/lib/CpuProfile.mjs FILE`). Empty without `dir`.
 */
export const profileEnv = (dir: string | boolean | undefined): Record<string, string> =>
  typeof dir === "string"
    ? {
      NODE_OPTIONS: `--import ${resolve(import.meta.dirname, "CpuProfileHook.mjs")}`,
      SB_CPU_PROF_DIR: resolve(dir)
    }
    : {}
