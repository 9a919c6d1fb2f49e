/**
 * `--cpu-prof` for processes whose flags we do not control (`--cpu-prof` is refused in
 * NODE_OPTIONS, `--import` is not): loaded with `NODE_OPTIONS="--import .../CpuProfileHook.mjs"`
 * and `SB_CPU_PROF_DIR=<dir>`, it starts the V8 profiler at once and writes
 * `<dir>/CPU.<pid>.cpuprofile` when the process exits (a same-thread inspector session answers
 * synchronously, so this works inside the `exit` handler).
 */
import { Session } from "node:inspector"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const dir = process.env["SB_CPU_PROF_DIR"]
if (dir) {
  const session = new Session()
  session.connect()
  session.post("Profiler.enable")
  session.post("Profiler.setSamplingInterval", { interval: 1000 })
  session.post("Profiler.start")
  process.on("exit", () => {
    session.post("Profiler.stop", (error, result) => {
      if (error) return
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, `CPU.${process.pid}.cpuprofile`), JSON.stringify(result.profile))
    })
  })
}
