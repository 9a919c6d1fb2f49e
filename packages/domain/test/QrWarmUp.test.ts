import { assert, describe, it } from "@effect/vitest"
import { QrSafetyWindow, QrWarmUp } from "@switchboard/domain"

const HOUR = 3_600_000
const DAY = 24 * HOUR
const LINKED = Date.UTC(2026, 10, 1, 9, 30)
const DEFAULT: QrWarmUp.WarmUpOverride = { _tag: "Default" }
/** `n` sends to new contacts, one a minute, ending at `end` */
const sends = (n: number, end: number) => Array.from({ length: n }, (_, i) => end - (n - 1 - i) * 60_000)

describe("QR warm-up schedule", () => {
  it("ramps from 20 new contacts on day 1 to the full 200 window on day 14, never down", () => {
    assert.strictEqual(QrWarmUp.WARM_UP_DAYS, 14)
    assert.strictEqual(QrWarmUp.WARM_UP_SCHEDULE.length, 14)
    assert.strictEqual(QrWarmUp.WARM_UP_SCHEDULE[0], 20)
    assert.strictEqual(QrWarmUp.WARM_UP_SCHEDULE[13], QrSafetyWindow.QR_DAILY_CAP)
    for (let i = 1; i < QrWarmUp.WARM_UP_SCHEDULE.length; i++) {
      assert.isAbove(QrWarmUp.WARM_UP_SCHEDULE[i]!, QrWarmUp.WARM_UP_SCHEDULE[i - 1]!)
    }
  })

  it("counts days in 24 h steps from the link, and ends after 14 days", () => {
    const at = (ms: number) => QrWarmUp.warmUpStage({ now: LINKED + ms, linkedAt: LINKED, override: DEFAULT })
    assert.deepInclude(at(0), { _tag: "WarmingUp", day: 1, limit: 20, dayEndsAt: LINKED + DAY })
    assert.deepInclude(at(DAY - 1), { day: 1 })
    assert.deepInclude(at(DAY), { day: 2, limit: QrWarmUp.WARM_UP_SCHEDULE[1]! })
    assert.deepInclude(at(14 * DAY - 1), { day: 14, limit: 200, endsAt: LINKED + 14 * DAY })
    assert.deepStrictEqual(at(14 * DAY), { _tag: "Complete", endedAt: LINKED + 14 * DAY })
  })

  it("is off when an operator switched it off or no link time is known", () => {
    assert.deepStrictEqual(QrWarmUp.warmUpStage({ now: LINKED, linkedAt: LINKED, override: { _tag: "Off" } }), {
      _tag: "Off"
    })
    assert.deepStrictEqual(QrWarmUp.warmUpStage({ now: LINKED, linkedAt: null, override: DEFAULT }), { _tag: "Off" })
  })

  it("lowers every day's cap to an operator's ceiling, never raises it", () => {
    const capped = (day: number, max: number) =>
      QrWarmUp.warmUpStage({ now: LINKED + (day - 1) * DAY, linkedAt: LINKED, override: { _tag: "Capped", max } })
    assert.deepInclude(capped(1, 5), { limit: 5 })
    assert.deepInclude(capped(1, 500), { limit: 20 })
    assert.deepInclude(capped(10, 50), { limit: 50 })
  })
})

describe("QR warm-up decision", () => {
  it("accepts the day's cap of new-contact sends and refuses the next, until the next day's cap", () => {
    const now = LINKED + 3 * HOUR
    assert.deepStrictEqual(
      QrWarmUp.decideWarmUp({ now, linkedAt: LINKED, override: DEFAULT, newContactSentAt: sends(19, now) }),
      { _tag: "Allowed" }
    )
    // 20 used in the last 24 h, all on day 1: day 2's cap (34) has room as soon as it begins
    assert.deepStrictEqual(
      QrWarmUp.decideWarmUp({ now, linkedAt: LINKED, override: DEFAULT, newContactSentAt: sends(20, now) }),
      { _tag: "Refused", limit: 20, day: 1, retryAt: LINKED + DAY }
    )
  })

  it("waits for sends to leave the 24 h window when the next day's cap would still be full", () => {
    // day 2 (cap 34): 34 sends in the window, the oldest 20 h ago; day 3's cap (48) begins in 2 h
    const now = LINKED + DAY + 22 * HOUR
    const oldest = now - 20 * HOUR
    const history = [oldest, ...sends(33, now)]
    const refused = QrWarmUp.decideWarmUp({
      now,
      linkedAt: LINKED,
      override: { _tag: "Capped", max: 34 },
      newContactSentAt: history
    })
    // capped at 34 every day: only the oldest leaving the window makes room
    assert.deepStrictEqual(refused, { _tag: "Refused", limit: 34, day: 2, retryAt: oldest + DAY })
    const ramped = QrWarmUp.decideWarmUp({ now, linkedAt: LINKED, override: DEFAULT, newContactSentAt: history })
    assert.deepStrictEqual(ramped, { _tag: "Refused", limit: 34, day: 2, retryAt: LINKED + 2 * DAY })
  })

  it("ignores sends older than 24 h, and refuses nothing once the warm-up is over or off", () => {
    const now = LINKED + 5 * HOUR
    const old = sends(20, now - 25 * HOUR)
    assert.deepStrictEqual(
      QrWarmUp.decideWarmUp({
        now: LINKED + DAY + 2 * HOUR,
        linkedAt: LINKED,
        override: DEFAULT,
        newContactSentAt: old
      }),
      { _tag: "Allowed" }
    )
    const lots = sends(500, LINKED + 14 * DAY)
    assert.deepStrictEqual(
      QrWarmUp.decideWarmUp({ now: LINKED + 14 * DAY, linkedAt: LINKED, override: DEFAULT, newContactSentAt: lots }),
      { _tag: "Allowed" }
    )
    assert.deepStrictEqual(
      QrWarmUp.decideWarmUp({ now, linkedAt: LINKED, override: { _tag: "Off" }, newContactSentAt: sends(500, now) }),
      { _tag: "Allowed" }
    )
  })

  it("a ceiling of 0 refuses every new contact until the warm-up ends", () => {
    const now = LINKED + 2 * HOUR
    assert.deepStrictEqual(
      QrWarmUp.decideWarmUp({ now, linkedAt: LINKED, override: { _tag: "Capped", max: 0 }, newContactSentAt: [] }),
      { _tag: "Refused", limit: 0, day: 1, retryAt: LINKED + 14 * DAY }
    )
  })
})
