import { assert, describe, it } from "@effect/vitest"
import { MessageStateMachine } from "@switchboard/domain"
import { Option } from "effect"

/** Walks `path` and says whether every step is allowed. */
const walk = (path: ReadonlyArray<MessageStateMachine.MessageStatus>) =>
  path.every((to, i) => i === 0 || MessageStateMachine.canTransition(path[i - 1]!, to))

const DELIVERY: ReadonlyArray<MessageStateMachine.MessageStatus> = [
  "dispatching",
  "provider_accepted",
  "sent",
  "delivered",
  "read"
]

describe("message state machine", () => {
  it("allows the delivery path queued -> dispatching -> provider_accepted -> sent -> delivered -> read", () => {
    assert.isTrue(walk(["queued", ...DELIVERY]))
  })

  it("allows a retryable failure back to the queue, and a permanent failure", () => {
    assert.isTrue(walk(["queued", "dispatching", "failed_retryable", "queued", "dispatching", "provider_accepted"]))
    assert.isTrue(walk(["queued", "dispatching", "failed_permanent"]))
    assert.isTrue(walk(["queued", "dispatching", "failed_retryable", "failed_permanent"]))
  })

  it("lets a provider refuse a message it took (a WhatsApp ack with an error), never one it sent", () => {
    assert.isTrue(walk(["queued", "dispatching", "provider_accepted", "failed_permanent"]))
    assert.isTrue(walk(["queued", "dispatching", "provider_accepted", "failed_retryable", "queued"]))
    for (const from of ["sent", "delivered", "read"] as const) {
      assert.isFalse(MessageStateMachine.canTransition(from, "failed_permanent"), `${from} -> failed_permanent`)
      assert.isFalse(MessageStateMachine.canTransition(from, "failed_retryable"), `${from} -> failed_retryable`)
    }
  })

  it("cancels and expires only what has not reached the provider", () => {
    for (const to of ["cancelled", "expired"] as const) {
      assert.isTrue(MessageStateMachine.canTransition("queued", to))
      for (const from of ["dispatching", "provider_accepted", "sent", "delivered", "read"] as const) {
        assert.isFalse(MessageStateMachine.canTransition(from, to), `${from} -> ${to}`)
      }
    }
  })

  it("never moves a delivered message back, whatever order the receipts come in", () => {
    for (let i = 0; i < DELIVERY.length; i++) {
      for (let j = 0; j < i; j++) {
        assert.isFalse(
          MessageStateMachine.canTransition(DELIVERY[i]!, DELIVERY[j]!),
          `${DELIVERY[i]} -> ${DELIVERY[j]}`
        )
      }
    }
    // a receipt may overtake the others (read before delivered before sent)
    assert.isTrue(MessageStateMachine.canTransition("provider_accepted", "read"))
    assert.isTrue(MessageStateMachine.canTransition("dispatching", "delivered"))
    assert.isFalse(MessageStateMachine.canTransition("read", "delivered"))
    assert.isFalse(MessageStateMachine.canTransition("read", "read"))
  })

  it("never re-enters the queue from a provider state or skips the dispatch step", () => {
    assert.deepStrictEqual(MessageStateMachine.ALLOWED_FROM.queued, ["created", "failed_retryable"])
    assert.deepStrictEqual(MessageStateMachine.ALLOWED_FROM.dispatching, ["queued"])
    assert.deepStrictEqual(MessageStateMachine.ALLOWED_FROM.created, [])
    assert.isFalse(MessageStateMachine.canTransition("queued", "sent"))
    assert.isFalse(MessageStateMachine.canTransition("queued", "provider_accepted"))
  })

  it("has read, failed_permanent, cancelled and expired as its terminal states", () => {
    assert.sameMembers([...MessageStateMachine.TERMINAL_STATUSES], ["read", "failed_permanent", "cancelled", "expired"])
    for (const from of MessageStateMachine.TERMINAL_STATUSES) {
      for (const to of MessageStateMachine.MESSAGE_STATUSES) {
        assert.isFalse(MessageStateMachine.canTransition(from, to), `${from} -> ${to}`)
      }
    }
  })

  it("reports events for queued, sent, delivered, read and permanent failure only", () => {
    assert.deepStrictEqual(MessageStateMachine.STATUS_EVENT, {
      queued: "message.queued",
      sent: "message.sent",
      delivered: "message.delivered",
      read: "message.read",
      failed_permanent: "message.failed"
    })
  })

  it("retries after 2 s, 8 s and 32 s, scaled, then gives up", () => {
    assert.deepStrictEqual(MessageStateMachine.dispatchRetryDelayMs(1, 1), Option.some(2_000))
    assert.deepStrictEqual(MessageStateMachine.dispatchRetryDelayMs(2, 1), Option.some(8_000))
    assert.deepStrictEqual(MessageStateMachine.dispatchRetryDelayMs(3, 1), Option.some(32_000))
    assert.deepStrictEqual(MessageStateMachine.dispatchRetryDelayMs(4, 1), Option.none())
    assert.deepStrictEqual(MessageStateMachine.dispatchRetryDelayMs(2, 0.01), Option.some(80))
    assert.deepStrictEqual(MessageStateMachine.dispatchRetryDelayMs(0, 1), Option.none())
    assert.strictEqual(MessageStateMachine.MAX_DISPATCH_ATTEMPTS, 4)
  })
})
