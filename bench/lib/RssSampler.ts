/**
 * The resident memory of some processes, sampled every `everyMs` (100 ms) while a phase runs: its
 * baseline (median of the samples before the phase), peak and last value per process, in MiB.
 */
import { percentile, rssMiB } from "./Measure.js"

export interface RssSeries {
  readonly baseline_mib: number
  readonly peak_mib: number
  readonly end_mib: number
  /** peak minus baseline */
  readonly growth_mib: number
  readonly samples: number
}

export const sampleRss = (pids: Record<string, number>, everyMs = 100) => {
  const series: Record<string, Array<number>> = Object.fromEntries(Object.keys(pids).map((name) => [name, []]))
  const take = () => {
    for (const [name, pid] of Object.entries(pids)) series[name]!.push(rssMiB(pid))
  }
  take()
  const timer = setInterval(take, everyMs)
  return {
    /** Samples for `ms` before the phase starts: the baseline. */
    settle: (ms = 1_000) => new Promise((r) => setTimeout(r, ms)),
    /** Marks where the phase begins (samples before it are the baseline). */
    mark: () => Object.fromEntries(Object.entries(series).map(([name, s]) => [name, s.length])),
    stop: (mark: Record<string, number>): Record<string, RssSeries> => {
      clearInterval(timer)
      take()
      return Object.fromEntries(
        Object.entries(series).map(([name, s]) => {
          const before = s.slice(0, mark[name])
          const during = s.slice(mark[name])
          const baseline = percentile(before, 50)
          const peak = Math.max(...during)
          return [name, {
            baseline_mib: round(baseline),
            peak_mib: round(peak),
            end_mib: round(s[s.length - 1]!),
            growth_mib: round(peak - baseline),
            samples: during.length
          }]
        })
      )
    }
  }
}

const round = (n: number) => Math.round(n * 10) / 10
