import { assert, describe, it } from "@effect/vitest"
import { QrPairingApi } from "@switchboard/api"
import type { QrConnectionEvent } from "@switchboard/providers"
import { Redacted } from "effect"
import { statusAfter, toSseFrame } from "../src/services/QrPairing.js"

const CH = "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"
const error = { reason: "connection_refused", message: "refused", failures: 2, nextAttemptAt: 0 } as const

const every: ReadonlyArray<QrConnectionEvent.QrPairingFrame> = [
  { _tag: "snapshot", channelId: CH, status: "connecting", phoneNumber: null, qr: null, connectionError: null },
  { _tag: "qr", channelId: CH, code: Redacted.make("2@abc"), expiresAt: 0, sequence: 1 },
  {
    _tag: "state",
    channelId: CH,
    from: "connecting",
    to: "awaiting_scan",
    reason: "qr_issued",
    closeCode: null,
    requiresRepair: false,
    phoneNumber: null,
    connectionError: null
  },
  { _tag: "connection_error", channelId: CH, ...error },
  { _tag: "expired", channelId: CH }
]

describe("QR stream frames", () => {
  it("are only the four the contract lists, whatever the pairing reports", () => {
    const names = every.map((frame) => toSseFrame(CH, frame, "connecting").event)
    for (const name of names) assert.include(QrPairingApi.QR_STREAM_EVENTS, name)
    assert.deepStrictEqual([...new Set(names)].sort(), [...QrPairingApi.QR_STREAM_EVENTS].sort())
  })

  it("carry a failed attempt as a qr.state that changes no status, with the connection error", () => {
    const frame = toSseFrame(CH, { _tag: "connection_error", channelId: CH, ...error }, "connecting")
    assert.deepStrictEqual(frame, {
      event: "qr.state",
      data: {
        channel_id: CH,
        from_status: "connecting",
        to_status: "connecting",
        reason: null,
        connection_error: {
          reason: "connection_refused",
          message: "refused",
          failures: 2,
          next_attempt_at: "1970-01-01T00:00:00.000Z"
        }
      }
    })
  })

  it("follow the status the stream told last", () => {
    const statuses = every.reduce<Array<string>>(
      (acc, frame) => [...acc, statusAfter((acc.at(-1) ?? "pending") as "pending", frame)],
      []
    )
    assert.deepStrictEqual(statuses, ["connecting", "connecting", "awaiting_scan", "awaiting_scan", "awaiting_scan"])
  })
})
