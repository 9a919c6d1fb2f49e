/**
 * `Partitions.monthSlices`: a window of ids cut at the months inside it, one slice a partition
 * (the queue's "first by order" probes walk one partition's index each: DispatchQueueRepo).
 */
import { describe, expect, it } from "@effect/vitest"
import { Partitions } from "@switchboard/db"
import { Ids } from "@switchboard/domain"

const ms = (iso: string) => Date.parse(iso)
const id = (iso: string) => Ids.idFloor("msg", ms(iso))

describe("Partitions.monthSlices", () => {
  it("leaves a window inside one month whole", () => {
    const now = ms("2026-11-15T10:00:00Z")
    const window = Partitions.queuedWindow(now)
    expect(Partitions.monthSlices("msg", window)).toEqual([window])
  })

  it("cuts the queue's window on a month's last day at the next month's first id", () => {
    const window = Partitions.queuedWindow(ms("2026-11-30T01:10:00Z"))
    expect(window.upper > id("2026-12-01T00:00:00Z")).toBe(true)
    expect(Partitions.monthSlices("msg", window)).toEqual([
      { lower: window.lower, upper: id("2026-12-01T00:00:00Z") },
      { lower: id("2026-12-01T00:00:00Z"), upper: window.upper }
    ])
  })

  it("cuts it on a month's first day, and at each month a long window crosses", () => {
    const first = Partitions.queuedWindow(ms("2027-01-01T08:00:00Z"))
    expect(Partitions.monthSlices("msg", first).map((s) => s.upper)).toEqual([
      id("2027-01-01T00:00:00Z"),
      first.upper
    ])
    const long = { lower: id("2026-10-20T00:00:00Z"), upper: id("2027-01-02T00:00:00Z") }
    expect(Partitions.monthSlices("msg", long)).toEqual([
      { lower: id("2026-10-20T00:00:00Z"), upper: id("2026-11-01T00:00:00Z") },
      { lower: id("2026-11-01T00:00:00Z"), upper: id("2026-12-01T00:00:00Z") },
      { lower: id("2026-12-01T00:00:00Z"), upper: id("2027-01-01T00:00:00Z") },
      { lower: id("2027-01-01T00:00:00Z"), upper: id("2027-01-02T00:00:00Z") }
    ])
  })

  it("starts no empty slice when the window begins on a month's first id", () => {
    const window = { lower: id("2026-12-01T00:00:00Z"), upper: id("2026-12-03T00:00:00Z") }
    expect(Partitions.monthSlices("msg", window)).toEqual([window])
  })
})
