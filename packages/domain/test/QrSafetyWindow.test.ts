import { assert, describe, it } from "@effect/vitest"
import { Pacer, QrSafetyWindow } from "@switchboard/domain"

const HOUR = 3_600_000
const NOW = Date.UTC(2026, 10, 22, 12)

describe("QR safety window", () => {
  it("caps at 200 per rolling 24 h; overrides only lower it", () => {
    assert.strictEqual(QrSafetyWindow.QR_DAILY_CAP, 200)
    assert.strictEqual(QrSafetyWindow.effectiveDailyCap(), 200)
    assert.strictEqual(QrSafetyWindow.effectiveDailyCap({ workspace: 50 }), 50)
    assert.strictEqual(QrSafetyWindow.effectiveDailyCap({ workspace: 150, channel: 80 }), 80)
    assert.strictEqual(QrSafetyWindow.effectiveDailyCap({ workspace: 1000 }), 200)
    assert.strictEqual(QrSafetyWindow.effectiveDailyCap({ channel: 500, workspace: null }), 200)
    assert.strictEqual(QrSafetyWindow.effectiveDailyCap({ channel: -3 }), 0)
  })

  it("allows the 200th send and refuses the 201st, until the oldest leaves the window", () => {
    const sentAt = Array.from({ length: 199 }, (_, i) => NOW - 23 * HOUR + i * 1000)
    assert.deepStrictEqual(QrSafetyWindow.decideDaily({ now: NOW, limit: 200, sentAt, queued: 0 }), {
      _tag: "Allowed",
      limit: 200,
      remaining: 0
    })
    const full = [...sentAt, NOW - 1000]
    assert.deepStrictEqual(QrSafetyWindow.decideDaily({ now: NOW, limit: 200, sentAt: full, queued: 0 }), {
      _tag: "Refused",
      limit: 200,
      retryAt: sentAt[0]! + QrSafetyWindow.QR_DAILY_WINDOW_MS
    })
    // an hour later the oldest has left the window
    assert.strictEqual(
      QrSafetyWindow.decideDaily({ now: NOW + HOUR, limit: 200, sentAt: full, queued: 0 })._tag,
      "Allowed"
    )
  })

  it("counts queued messages against the cap", () => {
    const sentAt = [NOW - 10 * HOUR, NOW - 5 * HOUR]
    assert.deepStrictEqual(QrSafetyWindow.decideDaily({ now: NOW, limit: 5, sentAt, queued: 2 }), {
      _tag: "Allowed",
      limit: 5,
      remaining: 0
    })
    // 2 sent + 3 queued = 5: the next needs one sent message to age out
    assert.deepStrictEqual(QrSafetyWindow.decideDaily({ now: NOW, limit: 5, sentAt, queued: 3 }), {
      _tag: "Refused",
      limit: 5,
      retryAt: NOW - 10 * HOUR + QrSafetyWindow.QR_DAILY_WINDOW_MS
    })
    // queued alone fill the cap: nothing sent can free room before a day has passed
    assert.deepStrictEqual(QrSafetyWindow.decideDaily({ now: NOW, limit: 5, sentAt: [], queued: 5 }), {
      _tag: "Refused",
      limit: 5,
      retryAt: NOW + QrSafetyWindow.QR_DAILY_WINDOW_MS
    })
  })

  it("ignores sends older than 24 h", () => {
    const old = Array.from({ length: 300 }, (_, i) => NOW - QrSafetyWindow.QR_DAILY_WINDOW_MS - i)
    assert.deepStrictEqual(QrSafetyWindow.decideDaily({ now: NOW, limit: 200, sentAt: old, queued: 0 }), {
      _tag: "Allowed",
      limit: 200,
      remaining: 199
    })
  })

  it("lets 6 a minute go to one recipient at once and delays the 7th until a minute after the first", () => {
    const sent = [0, 5, 10, 15, 20, 25].map((s) => NOW - 30_000 + s * 1000)
    assert.strictEqual(QrSafetyWindow.nextRecipientSendAt({ now: NOW, sentToRecipientAt: sent.slice(0, 5) }), NOW)
    assert.strictEqual(QrSafetyWindow.nextRecipientSendAt({ now: NOW, sentToRecipientAt: sent }), sent[0]! + 60_000)
    assert.strictEqual(QrSafetyWindow.nextRecipientSendAt({ now: NOW + 31_000, sentToRecipientAt: sent }), NOW + 31_000)
  })

  it("tracks spacing per recipient and forgets sends older than a minute", () => {
    let spacing = Pacer.emptyRecipientSpacing
    for (let i = 0; i < 6; i++) spacing = Pacer.recordRecipientSend(spacing, "+15550000001", NOW + i * 1000)
    spacing = Pacer.recordRecipientSend(spacing, "+15550000002", NOW + 6000)
    assert.strictEqual(Pacer.recipientReadyAt(spacing, "+15550000001", NOW + 6000), NOW + 60_000)
    assert.strictEqual(Pacer.recipientReadyAt(spacing, "+15550000002", NOW + 6000), NOW + 6000)
    spacing = Pacer.recordRecipientSend(spacing, "+15550000002", NOW + 120_000)
    assert.isFalse(spacing.has("+15550000001"))
  })
})
