import { assert, describe, it } from "@effect/vitest"
import {
  idlePacer,
  pacerForConnection,
  pauseUntil,
  QR_PACING_JITTER,
  QR_PER_RECIPIENT_CAP,
  QR_PER_RECIPIENT_WINDOW_MS,
  recipientMustWait,
  sendSlotWaitMs,
  takeSendSlot,
  THROTTLE_MAX_WAIT_MS,
  throttleBackOffMs,
  throttledAgain,
  waitingRecipients
} from "@switchboard/domain"
import type { ChannelPacer } from "@switchboard/domain"
import { Effect, Random } from "effect"

const NOW = Date.UTC(2026, 10, 22, 12)
const ALICE = "+15550000001"
const BOB = "+15550000002"

/** Sends to `recipients` in order as fast as the pacer lets them; answers when each went. */
const sendAll = (pacer: ChannelPacer, recipients: ReadonlyArray<string>, mps: number, start = NOW) => {
  let now = start
  const at: Array<number> = []
  for (const to of recipients) {
    now += sendSlotWaitMs(pacer, now)
    pacer = takeSendSlot(pacer, to, now, mps)
    at.push(now)
  }
  return { pacer, at }
}

describe("ChannelPacer", () => {
  it("opens one send slot per 1 / max_throughput_mps seconds, never a burst", () => {
    assert.strictEqual(sendSlotWaitMs(idlePacer, NOW), 0)
    const { at, pacer } = sendAll(idlePacer, [ALICE, BOB, ALICE, BOB], 2)
    assert.deepStrictEqual(at, [NOW, NOW + 500, NOW + 1000, NOW + 1500])
    assert.strictEqual(sendSlotWaitMs(pacer, NOW + 1600), 400)
    assert.strictEqual(sendSlotWaitMs(pacer, NOW + 2000), 0)
    // an idle channel does not save up slots: after a pause, sends are still spaced
    assert.deepStrictEqual(sendAll(pacer, [ALICE, BOB], 2, NOW + 60_000).at, [NOW + 60_000, NOW + 60_500])
  })

  it("takes the slot it is given: a send late by a timer's drift moves the next slot with it", () => {
    const pacer = takeSendSlot(idlePacer, ALICE, NOW + 3, 10)
    assert.strictEqual(sendSlotWaitMs(pacer, NOW + 3), 100)
    assert.strictEqual(sendSlotWaitMs(pacer, NOW + 102), 1)
  })

  it("leaves recipients alone on a channel without per-recipient spacing", () => {
    const { pacer } = sendAll(pacerForConnection(idlePacer, false), Array<string>(10).fill(ALICE), 80)
    assert.isFalse(recipientMustWait(pacer, ALICE, NOW + 1000))
    assert.deepStrictEqual(waitingRecipients(pacer, NOW + 1000), { waiting: [], readyAt: Number.POSITIVE_INFINITY })
    assert.strictEqual(pacer.spacing.size, 0)
  })

  it("holds a recipient at the cap for the rest of the window; the others go", () => {
    const sixToAlice = Array<string>(QR_PER_RECIPIENT_CAP).fill(ALICE)
    const { at, pacer } = sendAll(pacerForConnection(idlePacer, true), [...sixToAlice, BOB], 1)
    const now = at[at.length - 1]!
    assert.isTrue(recipientMustWait(pacer, ALICE, now))
    assert.isFalse(recipientMustWait(pacer, BOB, now))
    assert.deepStrictEqual(waitingRecipients(pacer, now), {
      waiting: [ALICE],
      readyAt: NOW + QR_PER_RECIPIENT_WINDOW_MS
    })
    assert.isFalse(recipientMustWait(pacer, ALICE, NOW + QR_PER_RECIPIENT_WINDOW_MS))
    assert.deepStrictEqual(waitingRecipients(pacer, NOW + QR_PER_RECIPIENT_WINDOW_MS).waiting, [])
  })

  it("rebuilds the spacing from the recorded sends when a connection opens, and keeps the slot", () => {
    const recent = Array.from({ length: QR_PER_RECIPIENT_CAP }, (_, i) => ({ to: ALICE, at: NOW - 30_000 + i }))
    const pacer = pacerForConnection(takeSendSlot(idlePacer, BOB, NOW, 1), true, recent)
    assert.isTrue(recipientMustWait(pacer, ALICE, NOW))
    assert.strictEqual(waitingRecipients(pacer, NOW).readyAt, NOW + 30_000)
    assert.strictEqual(sendSlotWaitMs(pacer, NOW), 1000)
    // a connection without spacing drops what the last one knew
    assert.strictEqual(pacerForConnection(pacer, false, recent).spacing.size, 0)
  })
})

describe("human pacing", () => {
  it("spaces a QR channel's sends by the rate's interval plus up to half of it at random, never less", () => {
    const qr = pacerForConnection(idlePacer, true)
    assert.strictEqual(takeSendSlot(qr, ALICE, NOW, 0.5, 0).nextSlotAt, NOW + 2_000)
    assert.strictEqual(takeSendSlot(qr, ALICE, NOW, 0.5, 0.5).nextSlotAt, NOW + 2_500)
    assert.strictEqual(
      takeSendSlot(qr, ALICE, NOW, 0.5, 0.999).nextSlotAt,
      NOW + 2_000 * (1 + QR_PACING_JITTER * 0.999)
    )
    assert.isBelow(takeSendSlot(qr, ALICE, NOW, 0.5, 0.999).nextSlotAt, NOW + 3_000)
  })

  it("keeps the exact interval on other providers (the sandbox)", () => {
    assert.strictEqual(takeSendSlot(idlePacer, ALICE, NOW, 2, 0.9).nextSlotAt, NOW + 500)
  })

  it.effect("draws each gap from the Random service, so two channels do not send in lock-step", () =>
    Effect.gen(function*() {
      const qr = pacerForConnection(idlePacer, true)
      const gaps = (seed: string) =>
        Effect.gen(function*() {
          let pacer = qr
          let at = NOW
          const out: Array<number> = []
          for (let i = 0; i < 5; i++) {
            pacer = takeSendSlot(pacer, `+1555000000${i}`, at, 0.5, yield* Random.next)
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
    assert.deepStrictEqual([1, 2, 3, 4, 5, 6].map(throttleBackOffMs), [
      30_000,
      60_000,
      120_000,
      240_000,
      480_000,
      900_000
    ])
    assert.strictEqual(throttleBackOffMs(40), 15 * 60_000)
  })

  it("holds the next send slot until the pause ends, never brings it forward", () => {
    const paused = pauseUntil({ ...idlePacer, nextSlotAt: 1_000 }, 31_000)
    assert.strictEqual(sendSlotWaitMs(paused, 1_000), 30_000)
    assert.strictEqual(pauseUntil({ ...idlePacer, nextSlotAt: 50_000 }, 31_000).nextSlotAt, 50_000)
  })

  it("counts a run of throttles from its first: the pause grows, and after an hour without a send taken the message gives up", () => {
    const t0 = 1_000_000
    const first = throttledAgain(undefined, t0)
    assert.deepStrictEqual(first, { run: { inARow: 1, since: t0 }, pauseMs: 30_000, givenUp: false })
    const second = throttledAgain(first.run, t0 + 30_000)
    assert.deepStrictEqual(second, { run: { inARow: 2, since: t0 }, pauseMs: 60_000, givenUp: false })
    assert.isFalse(throttledAgain(second.run, t0 + THROTTLE_MAX_WAIT_MS - 1).givenUp)
    assert.isTrue(throttledAgain(second.run, t0 + THROTTLE_MAX_WAIT_MS).givenUp)
    // a send taken ends the run: the next throttle starts over
    assert.deepStrictEqual(throttledAgain(undefined, t0 + 2 * THROTTLE_MAX_WAIT_MS).run.inARow, 1)
    // tests shorten both
    assert.deepStrictEqual(throttledAgain(first.run, t0 + 500, { scale: 0.001, maxWaitMs: 400 }), {
      run: { inARow: 2, since: t0 },
      pauseMs: 60,
      givenUp: true
    })
  })
})
