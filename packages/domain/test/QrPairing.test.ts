import { assert, describe, it } from "@effect/vitest"
import { type QrChannelStatus, type QrPairingEvent, transitionQrPairing } from "@switchboard/domain"

const to = (status: QrChannelStatus, event: QrPairingEvent) => {
  const t = transitionQrPairing(status, event)
  return t._tag === "Moved" ? t.to : t._tag === "Unchanged" ? `=${t.status}` : `refused:${t.reason}`
}

/** Plays events from `pending` and returns the statuses passed through. */
const walk = (...events: ReadonlyArray<QrPairingEvent>) => {
  let status: QrChannelStatus = "pending"
  const path: Array<string> = [status]
  for (const e of events) {
    const t = transitionQrPairing(status, e)
    if (t._tag === "Moved") {
      status = t.to
      path.push(`${t.to}(${t.reason})`)
    }
  }
  return path
}

describe("QR pairing state machine", () => {
  it("goes pending -> connecting -> awaiting_scan -> connected when the code is scanned", () => {
    assert.deepStrictEqual(
      walk({ _tag: "Start" }, { _tag: "CodeIssued" }, { _tag: "CodeIssued" }, { _tag: "Opened" }),
      [
        "pending",
        "connecting(pairing_started)",
        "awaiting_scan(qr_issued)",
        "connected(paired)"
      ]
    )
  })

  it("disconnects when every code expired unscanned", () => {
    assert.deepStrictEqual(walk({ _tag: "Start" }, { _tag: "CodeIssued" }, { _tag: "CodesExhausted" }), [
      "pending",
      "connecting(pairing_started)",
      "awaiting_scan(qr_issued)",
      "disconnected(qr_expired)"
    ])
  })

  it("degrades when the link is lost and comes back to connected", () => {
    assert.deepStrictEqual(
      walk({ _tag: "Start" }, { _tag: "Opened" }, { _tag: "LinkLost" }, { _tag: "LinkLost" }, { _tag: "Opened" }),
      [
        "pending",
        "connecting(pairing_started)",
        "connected(reconnected)",
        "degraded(link_lost)",
        "connected(reconnected)"
      ]
    )
  })

  it("disconnects when reconnecting gave up", () => {
    assert.strictEqual(to("degraded", { _tag: "GaveUp" }), "disconnected")
    const t = transitionQrPairing("degraded", { _tag: "GaveUp" })
    assert.deepInclude(t, { reason: "reconnect_budget_exhausted", requiresRepair: false })
  })

  it("asks for repair when the phone logged the device out, from any live status", () => {
    for (const status of ["connected", "degraded", "connecting", "awaiting_scan"] as const) {
      const t = transitionQrPairing(status, { _tag: "LoggedOutFromPhone" })
      assert.deepStrictEqual(t, {
        _tag: "Moved",
        from: status,
        to: "disconnected",
        reason: "logged_out_from_phone",
        requiresRepair: true
      })
    }
  })

  it("disconnects on our logout without asking for repair", () => {
    assert.deepStrictEqual(transitionQrPairing("connected", { _tag: "Logout" }), {
      _tag: "Moved",
      from: "connected",
      to: "disconnected",
      reason: "logged_out",
      requiresRepair: false
    })
  })

  it("disconnects on a replaced connection and keeps the reason", () => {
    const t = transitionQrPairing("connected", { _tag: "Terminated", reason: "connection_replaced" })
    assert.deepInclude(t, { to: "disconnected", reason: "connection_replaced" })
  })

  it("restarts pairing from any status but archived and suspended", () => {
    for (const status of ["pending", "connecting", "awaiting_scan", "connected", "degraded", "disconnected"] as const) {
      assert.strictEqual(to(status, { _tag: "Start" }), "connecting", status)
    }
    assert.strictEqual(to("archived", { _tag: "Start" }), "refused:channel_archived")
    assert.strictEqual(to("suspended", { _tag: "Start" }), "refused:channel_suspended")
  })

  it("ignores socket events that do not apply (a stale socket), and anything after archive", () => {
    assert.strictEqual(to("connected", { _tag: "CodeIssued" }), "=connected")
    assert.strictEqual(to("disconnected", { _tag: "Opened" }), "=disconnected")
    assert.strictEqual(to("disconnected", { _tag: "LinkLost" }), "=disconnected")
    assert.strictEqual(to("connected", { _tag: "CodesExhausted" }), "=connected")
    assert.strictEqual(to("archived", { _tag: "Opened" }), "=archived")
    assert.strictEqual(to("suspended", { _tag: "Opened" }), "=suspended")
    assert.strictEqual(to("suspended", { _tag: "Archive" }), "archived")
  })

  it("disconnects a channel whose pairing or link a new owner could not resume", () => {
    const t = transitionQrPairing("awaiting_scan", { _tag: "Interrupted" })
    assert.deepStrictEqual(t, {
      _tag: "Moved",
      from: "awaiting_scan",
      to: "disconnected",
      reason: "pairing_interrupted",
      requiresRepair: false
    })
    const lost = transitionQrPairing("connected", { _tag: "Interrupted" })
    assert.isTrue(lost._tag === "Moved" && lost.requiresRepair && lost.to === "disconnected")
    assert.strictEqual(to("pending", { _tag: "Interrupted" }), "=pending")
    assert.strictEqual(to("disconnected", { _tag: "Interrupted" }), "=disconnected")
  })

  it("resumes a stored link into connecting, leaving a connected channel as it is", () => {
    assert.strictEqual(to("disconnected", { _tag: "Resume" }), "connecting")
    assert.strictEqual(to("connected", { _tag: "Resume" }), "=connected")
    assert.strictEqual(to("degraded", { _tag: "Resume" }), "=degraded")
  })
})
