/**
 * `--cpu-prof` for processes whose flags we do not control (`--cpu-prof` is refused in
 * NODE_OPTIONS, `--import` is not): loaded with `NODE_OPTIONS="--import .../CpuProfileHook.mjs"`
 * and `SB_CPU_PROF_DIR=<dir>`, it starts the V8 profiler at once and writes
 * `<dir>/CPU.<pid>.cpuprofile` when it is told to stop (SIGTERM: a runner with many entities may
 * take longer to shut down than the stack waits before SIGKILL) or exits, whichever comes first
 * (a same-thread inspector session answers synchronously, so this works inside those handlers).
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
  let written = false
  const write = () => {
    if (written) return
    written = true
    session.post("Profiler.stop", (error, result) => {
      if (error) return
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, `CPU.${process.pid}.cpuprofile`), JSON.stringify(result.profile))
    })
  }
  // a listener does not change what SIGTERM does: the service's own handler still shuts it down
  process.on("SIGTERM", write)
  process.on("exit", write)
}
