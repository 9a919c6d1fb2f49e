import { assert, describe, it } from "@effect/vitest"
import { Pacer, QrSafetyWindow } from "@switchboard/domain"
import { Effect, Random } from "effect"

const NOW = Date.UTC(2026, 10, 22, 12)
const ALICE = "+15550000001"
const BOB = "+15550000002"

/** Sends to `recipients` in order as fast as the pacer lets them; answers when each went. */
const sendAll = (pacer: Pacer.ChannelPacer, recipients: ReadonlyArray<string>, mps: number, start = NOW) => {
  let now = start
  const at: Array<number> = []
  for (const to of recipients) {
    now += Pacer.sendSlotWaitMs(pacer, now)
    pacer = Pacer.takeSendSlot(pacer, to, now, mps)
    at.push(now)
  }
  return { pacer, at }
}

describe("ChannelPacer", () => {
  it("opens one send slot per 1 / max_throughput_mps seconds, never a burst", () => {
    assert.strictEqual(Pacer.sendSlotWaitMs(Pacer.idlePacer, NOW), 0)
    const { at, pacer } = sendAll(Pacer.idlePacer, [ALICE, BOB, ALICE, BOB], 2)
    assert.deepStrictEqual(at, [NOW, NOW + 500, NOW + 1000, NOW + 1500])
    assert.strictEqual(Pacer.sendSlotWaitMs(pacer, NOW + 1600), 400)
    assert.strictEqual(Pacer.sendSlotWaitMs(pacer, NOW + 2000), 0)
    // an idle channel does not save up slots: after a pause, sends are still spaced
    assert.deepStrictEqual(sendAll(pacer, [ALICE, BOB], 2, NOW + 60_000).at, [NOW + 60_000, NOW + 60_500])
  })

  it("takes the slot it is given: a send late by a timer's drift moves the next slot with it", () => {
    const pacer = Pacer.takeSendSlot(Pacer.idlePacer, ALICE, NOW + 3, 10)
    assert.strictEqual(Pacer.sendSlotWaitMs(pacer, NOW + 3), 100)
    assert.strictEqual(Pacer.sendSlotWaitMs(pacer, NOW + 102), 1)
  })

  it("leaves recipients alone on a channel without per-recipient spacing", () => {
    const { pacer } = sendAll(Pacer.pacerForConnection(Pacer.idlePacer, false), Array<string>(10).fill(ALICE), 80)
    assert.isFalse(Pacer.recipientMustWait(pacer, ALICE, NOW + 1000))
    assert.deepStrictEqual(Pacer.waitingRecipients(pacer, NOW + 1000), {
      waiting: [],
      readyAt: Number.POSITIVE_INFINITY
    })
    assert.strictEqual(pacer.spacing.size, 0)
  })

  it("holds a recipient at the cap for the rest of the window; the others go", () => {
    const sixToAlice = Array<string>(QrSafetyWindow.QR_PER_RECIPIENT_CAP).fill(ALICE)
    const { at, pacer } = sendAll(Pacer.pacerForConnection(Pacer.idlePacer, true), [...sixToAlice, BOB], 1)
    const now = at[at.length - 1]!
    assert.isTrue(Pacer.recipientMustWait(pacer, ALICE, now))
    assert.isFalse(Pacer.recipientMustWait(pacer, BOB, now))
    assert.deepStrictEqual(Pacer.waitingRecipients(pacer, now), {
      waiting: [ALICE],
      readyAt: NOW + QrSafetyWindow.QR_PER_RECIPIENT_WINDOW_MS
    })
    assert.isFalse(Pacer.recipientMustWait(pacer, ALICE, NOW + QrSafetyWindow.QR_PER_RECIPIENT_WINDOW_MS))
    assert.deepStrictEqual(Pacer.waitingRecipients(pacer, NOW + QrSafetyWindow.QR_PER_RECIPIENT_WINDOW_MS).waiting, [])
  })

  it("rebuilds the spacing from the recorded sends when a connection opens, and keeps the slot", () => {
    const recent = Array.from(
      { length: QrSafetyWindow.QR_PER_RECIPIENT_CAP },
      (_, i) => ({ to: ALICE, at: NOW - 30_000 + i })
    )
    const pacer = Pacer.pacerForConnection(Pacer.takeSendSlot(Pacer.idlePacer, BOB, NOW, 1), true, recent)
    assert.isTrue(Pacer.recipientMustWait(pacer, ALICE, NOW))
    assert.strictEqual(Pacer.waitingRecipients(pacer, NOW).readyAt, NOW + 30_000)
    assert.strictEqual(Pacer.sendSlotWaitMs(pacer, NOW), 1000)
    // a connection without spacing drops what the last one knew
    assert.strictEqual(Pacer.pacerForConnection(pacer, false, recent).spacing.size, 0)
  })
})

describe("human pacing", () => {
  it("spaces a QR channel's sends by the rate's interval plus up to half of it at random, never less", () => {
    const qr = Pacer.pacerForConnection(Pacer.idlePacer, true)
    assert.strictEqual(Pacer.takeSendSlot(qr, ALICE, NOW, 0.5, 0).nextSlotAt, NOW + 2_000)
    assert.strictEqual(Pacer.takeSendSlot(qr, ALICE, NOW, 0.5, 0.5).nextSlotAt, NOW + 2_500)
    assert.strictEqual(
      Pacer.takeSendSlot(qr, ALICE, NOW, 0.5, 0.999).nextSlotAt,
      NOW + 2_000 * (1 + Pacer.QR_PACING_JITTER * 0.999)
    )
    assert.isBelow(Pacer.takeSendSlot(qr, ALICE, NOW, 0.5, 0.999).nextSlotAt, NOW + 3_000)
  })

  it("keeps the exact interval on other providers (the sandbox)", () => {
    assert.strictEqual(Pacer.takeSendSlot(Pacer.idlePacer, ALICE, NOW, 2, 0.9).nextSlotAt, NOW + 500)
  })

  it.effect("draws each gap from the Random service, so two channels do not send in lock-step", () =>
    Effect.gen(function*() {
      const qr = Pacer.pacerForConnection(Pacer.idlePacer, true)
      const gaps = (seed: string) =>
        Effect.gen(function*() {
          let pacer = qr
          let at = NOW
          const out: Array<number> = []
          for (let i = 0; i < 5; i++) {
            pacer = Pacer.takeSendSlot(pacer, `+1555000000${i}`, at, 0.5, yield* Random.next)
            out.push(pacer.nextSlotAt - at)
            at = pacer.nextSlotAt
          }
          return out
        }).pipe(Effect.withRandom(Random.make(seed)))
      const one = yield* gaps("channel one")
      const two = yield* gaps("channel two")
      assert.notDeepEqual(one, two)
      for (const gap of [...one, ...two]) {
        assert.isAtLeast(gap, 2_000)
        assert.isBelow(gap, 3_000)
      }
    }))
})

describe("throttle back-off", () => {
  it("pauses 30 s after the first throttle, doubling per throttle in a row, at most 15 minutes", () => {
    assert.deepStrictEqual([1, 2, 3, 4, 5, 6].map(Pacer.throttleBackOffMs), [
      30_000,
      60_000,
      120_000,
      240_000,
      480_000,
      900_000
    ])
    assert.strictEqual(Pacer.throttleBackOffMs(40), 15 * 60_000)
  })

  it("holds the next send slot until the pause ends, never brings it forward", () => {
    const paused = Pacer.pauseUntil({ ...Pacer.idlePacer, nextSlotAt: 1_000 }, 31_000)
    assert.strictEqual(Pacer.sendSlotWaitMs(paused, 1_000), 30_000)
    assert.strictEqual(Pacer.pauseUntil({ ...Pacer.idlePacer, nextSlotAt: 50_000 }, 31_000).nextSlotAt, 50_000)
  })

  it("counts a run of throttles from its first: the pause grows, and after an hour without a send taken the message gives up", () => {
    const t0 = 1_000_000
    const first = Pacer.throttledAgain(undefined, t0)
    assert.deepStrictEqual(first, { run: { inARow: 1, since: t0 }, pauseMs: 30_000, givenUp: false })
    const second = Pacer.throttledAgain(first.run, t0 + 30_000)
    assert.deepStrictEqual(second, { run: { inARow: 2, since: t0 }, pauseMs: 60_000, givenUp: false })
    assert.isFalse(Pacer.throttledAgain(second.run, t0 + Pacer.THROTTLE_MAX_WAIT_MS - 1).givenUp)
    assert.isTrue(Pacer.throttledAgain(second.run, t0 + Pacer.THROTTLE_MAX_WAIT_MS).givenUp)
    // a send taken ends the run: the next throttle starts over
    assert.deepStrictEqual(Pacer.throttledAgain(undefined, t0 + 2 * Pacer.THROTTLE_MAX_WAIT_MS).run.inARow, 1)
    // tests shorten both
    assert.deepStrictEqual(Pacer.throttledAgain(first.run, t0 + 500, { scale: 0.001, maxWaitMs: 400 }), {
      run: { inARow: 2, since: t0 },
      pauseMs: 60,
      givenUp: true
    })
  })
})
