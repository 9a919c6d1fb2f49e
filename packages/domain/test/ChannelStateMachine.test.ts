import { assert, describe, it } from "@effect/vitest"
import { ChannelStateMachine, Events } from "@switchboard/domain"

describe("channel statuses", () => {
  it("accepts and dispatches sends only while connected", () => {
    assert.deepStrictEqual(ChannelStateMachine.CHANNEL_STATUSES.filter(ChannelStateMachine.acceptsSends), ["connected"])
    assert.deepStrictEqual(ChannelStateMachine.CHANNEL_STATUSES.filter(ChannelStateMachine.dispatches), ["connected"])
  })

  it("archives from every status except archived, and never leaves archived", () => {
    for (const from of ChannelStateMachine.CHANNEL_STATUSES) {
      const t = ChannelStateMachine.transitionChannel(from, { _tag: "Archive" })
      assert.strictEqual(t._tag === "Moved" && t.to === "archived", from !== "archived", from)
      for (const event of [{ _tag: "Start" }, { _tag: "Opened" }, { _tag: "Resume" }] as const) {
        assert.notStrictEqual(
          ChannelStateMachine.transitionChannel("archived", event)._tag,
          "Moved",
          `archived ${event._tag}`
        )
      }
    }
  })
})

/** The move `input` makes from `status` (fails the test when it does not move). */
const move = (
  status: ChannelStateMachine.ChannelStatus,
  input: ChannelStateMachine.ChannelInput
): ChannelStateMachine.ChannelMove => {
  const t = ChannelStateMachine.transitionChannel(status, input)
  assert.strictEqual(t._tag, "Moved", `${status} ${input._tag}`)
  return t as ChannelStateMachine.ChannelMove
}

describe("operator suspension", () => {
  it("suspends any channel but an archived or suspended one", () => {
    for (const from of ChannelStateMachine.CHANNEL_STATUSES) {
      const t = ChannelStateMachine.transitionChannel(from, { _tag: "Suspend" })
      assert.strictEqual(
        t._tag === "Moved" && t.to === "suspended" && t.reason === "suspended",
        !ChannelStateMachine.PLATFORM_HELD_STATUSES.includes(from),
        from
      )
    }
  })

  it("reactivates a sandbox channel to connected and any other to disconnected, only from suspended", () => {
    assert.deepStrictEqual(move("suspended", { _tag: "Reactivate", provider: "sandbox" }), {
      _tag: "Moved",
      from: "suspended",
      to: "connected",
      reason: "reactivated",
      requiresRepair: false
    })
    assert.strictEqual(move("suspended", { _tag: "Reactivate", provider: "qr" }).to, "disconnected")
    for (const from of ChannelStateMachine.CHANNEL_STATUSES.filter((s) => s !== "suspended")) {
      assert.strictEqual(
        ChannelStateMachine.transitionChannel(from, { _tag: "Reactivate", provider: "sandbox" })._tag,
        "Unchanged",
        from
      )
    }
  })

  it("refuses qr/start on a suspended channel and ignores the link's reports", () => {
    assert.deepStrictEqual(ChannelStateMachine.transitionChannel("suspended", { _tag: "Start" }), {
      _tag: "Refused",
      status: "suspended",
      reason: "channel_suspended"
    })
    assert.strictEqual(ChannelStateMachine.transitionChannel("suspended", { _tag: "Opened" })._tag, "Unchanged")
    assert.strictEqual(move("suspended", { _tag: "Archive" }).to, "archived")
  })
})

describe("events of a channel move", () => {
  it("reports connected on reaching connected, disconnected on reaching disconnected", () => {
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("awaiting_scan", { _tag: "Opened" })), [
      "channel.connected"
    ])
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("degraded", { _tag: "Opened" })), [
      "channel.connected"
    ])
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("degraded", { _tag: "GaveUp" })), [
      "channel.disconnected"
    ])
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("awaiting_scan", { _tag: "CodesExhausted" })), [
      "channel.disconnected"
    ])
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("connected", { _tag: "LinkLost" })), [])
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("pending", { _tag: "Start" })), [])
  })

  it("adds requires_repair when the link is gone for good, even when already disconnected", () => {
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("connected", { _tag: "LoggedOutFromPhone" })), [
      "channel.disconnected",
      "channel.requires_repair"
    ])
    assert.deepStrictEqual(
      ChannelStateMachine.channelMoveEvents(move("disconnected", { _tag: "LoggedOutFromPhone" })),
      [
        "channel.requires_repair"
      ]
    )
  })

  it("reports disconnected when a channel that could send is suspended, and nothing for the others", () => {
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("connected", { _tag: "Suspend" })), [
      "channel.disconnected"
    ])
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("degraded", { _tag: "Suspend" })), [
      "channel.disconnected"
    ])
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("pending", { _tag: "Suspend" })), [])
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(move("disconnected", { _tag: "Suspend" })), [])
  })

  it("reports connected when a sandbox channel is reactivated, nothing when a QR channel waits for qr/start", () => {
    const sandbox = move("suspended", { _tag: "Reactivate", provider: "sandbox" })
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(sandbox), ["channel.connected"])
    assert.deepStrictEqual(
      ChannelStateMachine.channelMoveEvents(move("suspended", { _tag: "Reactivate", provider: "qr" })),
      []
    )
  })

  it("reports archived (and nothing else) on archiving, without the phone number", () => {
    const archived = move("connected", { _tag: "Archive" })
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(archived), ["channel.archived"])
    const [event] = Events.channelMoveDomainEvents("ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z", archived, "+15550001111")
    assert.deepStrictEqual(event!.encodeData(), {
      object: "channel",
      object_id: "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z",
      channel_id: "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z",
      status: "archived",
      from_status: "connected",
      to_status: "archived",
      reason: "archived"
    })
  })
})

const to = (status: ChannelStateMachine.ChannelStatus, event: ChannelStateMachine.ChannelInput) => {
  const t = ChannelStateMachine.transitionChannel(status, event)
  return t._tag === "Moved" ? t.to : t._tag === "Unchanged" ? `=${t.status}` : `refused:${t.reason}`
}

/** Plays events from `pending` and returns the statuses passed through. */
const walk = (...events: ReadonlyArray<ChannelStateMachine.ChannelInput>) => {
  let status: ChannelStateMachine.ChannelStatus = "pending"
  const path: Array<string> = [status]
  for (const e of events) {
    const t = ChannelStateMachine.transitionChannel(status, e)
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

  it("links by pairing code: issued, then expired untyped or refused for the number, with their own reasons", () => {
    assert.deepStrictEqual(walk({ _tag: "Start" }, { _tag: "CodeIssued", pairingCode: true }, { _tag: "Opened" }), [
      "pending",
      "connecting(pairing_started)",
      "awaiting_scan(pairing_code_issued)",
      "connected(paired)"
    ])
    assert.deepStrictEqual(
      walk({ _tag: "Start" }, { _tag: "CodeIssued", pairingCode: true }, { _tag: "CodesExhausted", pairingCode: true }),
      [
        "pending",
        "connecting(pairing_started)",
        "awaiting_scan(pairing_code_issued)",
        "disconnected(pairing_code_expired)"
      ]
    )
    assert.deepStrictEqual(walk({ _tag: "Start" }, { _tag: "PairingCodeRefused" }), [
      "pending",
      "connecting(pairing_started)",
      "disconnected(phone_number_refused)"
    ])
    assert.strictEqual(to("connected", { _tag: "PairingCodeRefused" }), "=connected")
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
    const t = ChannelStateMachine.transitionChannel("degraded", { _tag: "GaveUp" })
    assert.deepInclude(t, { reason: "reconnect_budget_exhausted", requiresRepair: false })
  })

  it("asks for repair when the phone logged the device out, from any live status", () => {
    for (const status of ["connected", "degraded", "connecting", "awaiting_scan"] as const) {
      const t = ChannelStateMachine.transitionChannel(status, { _tag: "LoggedOutFromPhone" })
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
    assert.deepStrictEqual(ChannelStateMachine.transitionChannel("connected", { _tag: "Logout" }), {
      _tag: "Moved",
      from: "connected",
      to: "disconnected",
      reason: "logged_out",
      requiresRepair: false
    })
  })

  it("disconnects on a replaced connection and keeps the reason", () => {
    const t = ChannelStateMachine.transitionChannel("connected", { _tag: "Terminated", reason: "connection_replaced" })
    assert.deepInclude(t, { to: "disconnected", reason: "connection_replaced" })
  })

  it("keeps a restricted channel's status and says why in its reason, with no event", () => {
    const t = ChannelStateMachine.transitionChannel("connected", { _tag: "Restriction", reason: "account_restricted" })
    assert.deepStrictEqual(t, {
      _tag: "Moved",
      from: "connected",
      to: "connected",
      reason: "account_restricted",
      requiresRepair: false
    })
    assert.deepStrictEqual(ChannelStateMachine.channelMoveEvents(t as ChannelStateMachine.ChannelMove), [])
    for (const status of ["pending", "disconnected", "suspended", "archived"] as const) {
      assert.strictEqual(
        ChannelStateMachine.transitionChannel(status, { _tag: "Restriction", reason: "reachout_timelocked" })._tag,
        "Unchanged"
      )
    }
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
    const t = ChannelStateMachine.transitionChannel("awaiting_scan", { _tag: "Interrupted" })
    assert.deepStrictEqual(t, {
      _tag: "Moved",
      from: "awaiting_scan",
      to: "disconnected",
      reason: "pairing_interrupted",
      requiresRepair: false
    })
    const lost = ChannelStateMachine.transitionChannel("connected", { _tag: "Interrupted" })
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
