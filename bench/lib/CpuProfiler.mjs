/**
 * Preload that profiles a whole process like `node --cpu-prof` (which Node 20 refuses in
 * NODE_OPTIONS): starts the V8 sampling profiler at load and writes
 * `$CPU_PROFILE_DIR/<pid>.cpuprofile` when the process exits.
 *
 *   NODE_OPTIONS="--import /abs/path/bench/lib/CpuProfiler.mjs" CPU_PROFILE_DIR=/tmp/prof node ...
 */
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { join } from "node:path"

const dir = process.env["CPU_PROFILE_DIR"]
if (dir) {
  const session = new Session()
  session.connect()
  // the in-thread session answers synchronously, so this also works inside an "exit" handler
  session.post("Profiler.enable")
  session.post("Profiler.setSamplingInterval", { interval: 1000 })
  session.post("Profiler.start")
  process.on("exit", () => {
    session.post("Profiler.stop", (error, result) => {
      if (!error) writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile))
    })
  })
}
