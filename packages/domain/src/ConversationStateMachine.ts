/**
 * Which events a conversation's changes report (docs/API.md "Conversations"). A conversation is
 * `open` or `closed`; there is one per (channel, contact) for good: a message to or from the
 * contact of a closed one reopens the same conversation. Each change reports exactly one event:
 * the status (`conversation.closed` / `.reopened`), the assignee (`conversation.assigned`), or
 * anything else (`conversation.updated`, today the read marker); a request that changes nothing
 * reports nothing.
 */
import { Schema } from "effect"

export const ConversationStatus = Schema.Literal("open", "closed").annotations({ identifier: "ConversationStatus" })
export type ConversationStatus = typeof ConversationStatus.Type

/** Why a closed conversation opened again. */
export const ReopenReason = Schema.Literal("outbound_message", "inbound_message", "request").annotations({
  identifier: "ConversationReopenReason",
  description:
    "`outbound_message`: a send or reply to the contact; `inbound_message`: the contact wrote; `request`: `PATCH` with `status: open`"
})
export type ReopenReason = typeof ReopenReason.Type

/**
 * The event a message brings to its conversation, from the conversation's status before it
 * (`null`: there was none, the message created it). Every message leaves its conversation open.
 */
export const messageArrival = (
  prior: ConversationStatus | null,
  direction: "outbound" | "inbound"
):
  | { readonly type: "conversation.created" }
  | { readonly type: "conversation.reopened"; readonly reason: ReopenReason }
  | undefined =>
  prior === null
    ? { type: "conversation.created" }
    : prior === "closed"
    ? { type: "conversation.reopened", reason: direction === "inbound" ? "inbound_message" : "outbound_message" }
    : undefined

export interface ConversationState {
  readonly status: ConversationStatus
  readonly assigneeId: `usr_${string}` | null
}

export type ConversationChange =
  | { readonly type: "conversation.closed" }
  | { readonly type: "conversation.reopened"; readonly reason: ReopenReason }
  | {
    readonly type: "conversation.assigned"
    readonly from: `usr_${string}` | null
    readonly to: `usr_${string}` | null
  }

/** The events of an update from `before` to `after`: one per member that changed, none when nothing did. */
export const updateChanges = (
  before: ConversationState,
  after: ConversationState
): ReadonlyArray<ConversationChange> => {
  const changes: Array<ConversationChange> = []
  if (before.status !== after.status) {
    changes.push(
      after.status === "closed" ? { type: "conversation.closed" } : {
        type: "conversation.reopened",
        reason: "request"
      }
    )
  }
  if (before.assigneeId !== after.assigneeId) {
    changes.push({ type: "conversation.assigned", from: before.assigneeId, to: after.assigneeId })
  }
  return changes
}
