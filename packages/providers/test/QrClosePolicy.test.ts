import { assert, describe, it } from "@effect/vitest"
import { DisconnectReason } from "baileys"
import { type Close, type CloseAction, onClose, reconnectDelay } from "../src/qr/QrClosePolicy.js"

const budget = { reconnectMaxAttempts: 5, connectMaxFailures: 3 }

/** A close after the link opened: paired, nothing spent. */
const paired: Close = {
  code: undefined,
  unreached: false,
  paired: true,
  codesShown: false,
  attempts: 0,
  connectFailures: 0,
  interactive: false
}
/** A close during pairing, after codes were shown. */
const pairing: Close = { ...paired, paired: false, codesShown: true, interactive: true }

const tag = (close: Close): string => {
  const action: CloseAction = onClose(close, budget)
  return action._tag === "Terminated" ? `Terminated:${action.reason}` : action._tag
}

describe("QrClosePolicy.onClose", () => {
  // every Baileys DisconnectReason, and the codes we handle beside them: paired / pairing with codes
  // shown / paired with the budget spent
  const table: ReadonlyArray<readonly [string, number | undefined, string, string, string]> = [
    ["connectionClosed", DisconnectReason.connectionClosed, "Reconnect", "Reconnect", "GiveUp"],
    ["connectionLost = timedOut", DisconnectReason.connectionLost, "Reconnect", "CodesExpired", "GiveUp"],
    [
      "connectionReplaced",
      DisconnectReason.connectionReplaced,
      "Terminated:connection_replaced",
      "Terminated:connection_replaced",
      "Terminated:connection_replaced"
    ],
    ["loggedOut", DisconnectReason.loggedOut, "LoggedOut", "LoggedOut", "LoggedOut"],
    ["badSession", DisconnectReason.badSession, "Reconnect", "Reconnect", "GiveUp"],
    ["restartRequired", DisconnectReason.restartRequired, "Restart", "Restart", "GiveUp"],
    [
      "multideviceMismatch",
      DisconnectReason.multideviceMismatch,
      "Terminated:forbidden",
      "Terminated:forbidden",
      "Terminated:forbidden"
    ],
    ["forbidden", DisconnectReason.forbidden, "Terminated:forbidden", "Terminated:forbidden", "Terminated:forbidden"],
    ["unavailableService", DisconnectReason.unavailableService, "Reconnect", "Reconnect", "GiveUp"],
    [
      "405 client outdated",
      405,
      "Terminated:client_outdated",
      "Terminated:client_outdated",
      "Terminated:client_outdated"
    ],
    ["another code (499)", 499, "Reconnect", "Reconnect", "GiveUp"],
    ["no code", undefined, "Reconnect", "Reconnect", "GiveUp"]
  ]

  it("covers every Baileys DisconnectReason", () => {
    const codes = Object.values(DisconnectReason).filter((v): v is number => typeof v === "number")
    const covered = new Set(table.map(([, code]) => code))
    assert.deepStrictEqual(codes.filter((code) => !covered.has(code)), [])
  })

  for (const [name, code, whenPaired, whenPairing, whenSpent] of table) {
    it(`${name} (${code}): ${whenPaired} when paired, ${whenPairing} while pairing, ${whenSpent} with the budget spent`, () => {
      assert.strictEqual(tag({ ...paired, code }), whenPaired)
      assert.strictEqual(tag({ ...pairing, code }), whenPairing)
      assert.strictEqual(tag({ ...paired, code, attempts: budget.reconnectMaxAttempts }), whenSpent)
    })
  }

  it("a 408 before any QR code was shown is a lost link, not an expiry", () => {
    assert.strictEqual(tag({ ...pairing, code: DisconnectReason.timedOut, codesShown: false }), "Reconnect")
  })

  it("a close before WhatsApp was reached is a connection error whatever its code (a proxy's 401 is no logout)", () => {
    for (
      const code of [
        DisconnectReason.loggedOut,
        DisconnectReason.connectionReplaced,
        DisconnectReason.timedOut,
        405,
        undefined
      ]
    ) {
      assert.strictEqual(tag({ ...paired, code, unreached: true, connectFailures: 1 }), "Reconnect")
    }
  })

  it("after qr/start, attempts that cannot reach WhatsApp give up at connectMaxFailures in a row", () => {
    const unreached = { ...pairing, code: 408, unreached: true }
    assert.strictEqual(tag({ ...unreached, connectFailures: budget.connectMaxFailures - 1 }), "Reconnect")
    assert.strictEqual(tag({ ...unreached, connectFailures: budget.connectMaxFailures }), "GiveUp")
  })

  it("a resumed link that cannot reach WhatsApp keeps the whole reconnect budget", () => {
    const unreached = { ...paired, code: 408, unreached: true, connectFailures: 10 }
    assert.strictEqual(tag(unreached), "Reconnect")
    assert.strictEqual(tag({ ...unreached, attempts: budget.reconnectMaxAttempts }), "GiveUp")
  })
})

describe("QrClosePolicy.reconnectDelay", () => {
  const delays = { baseMs: 1_000, maxMs: 30_000 }

  it("doubles from the base delay and stops at the maximum", () => {
    assert.deepStrictEqual([0, 1, 2, 3, 4, 5, 6].map((n) => reconnectDelay(n, delays, 1)), [
      1_000,
      2_000,
      4_000,
      8_000,
      16_000,
      30_000,
      30_000
    ])
  })

  it("is between half and all of that delay (equal jitter)", () => {
    assert.strictEqual(reconnectDelay(2, delays, 0), 2_000)
    assert.strictEqual(reconnectDelay(2, delays, 0.5), 3_000)
    assert.strictEqual(reconnectDelay(9, delays, 0), 15_000)
  })
})
