/** Conversations: at most one open per (channel, contact), created or reopened by a message. */
import { SqlClient } from "@effect/sql"
import { DomainEvent, newId } from "@switchboard/domain"
import { Effect } from "effect"
import { EventsRepo } from "./EventsRepo.js"
import { dieOnDatabaseError } from "./Rows.js"

export class ConversationsRepo extends Effect.Service<ConversationsRepo>()("@switchboard/db/ConversationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo

    /** The open conversation of (channel, contact), created (or reopened) when missing. */
    const upsertConversation = Effect.fn("ConversationsRepo.upsertConversation")(
      function*(workspaceId: string, channelId: string, contactId: string, now: string) {
        // the row types are our own `RETURNING id` / `SELECT id` (a typed read, no decoding: send path)
        const open = yield* sql<{ id: string }>`UPDATE conversations SET last_message_at = ${now}, updated_at = ${now}
          WHERE channel_id = ${channelId} AND contact_id = ${contactId} AND status = 'open' RETURNING id`
        if (open[0]) return open[0].id
        const id = yield* newId("cnv")
        const inserted = yield* sql<
          { id: string }
        >`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status,
            last_message_at, created_at, updated_at)
          VALUES (${id}, ${workspaceId}, ${channelId}, ${contactId}, 'open', ${now}, ${now}, ${now})
          ON CONFLICT (channel_id, contact_id) WHERE status = 'open' DO NOTHING RETURNING id`
        if (!inserted[0]) {
          const again = yield* sql<{ id: string }>`SELECT id FROM conversations
            WHERE channel_id = ${channelId} AND contact_id = ${contactId} AND status = 'open'`
          return again[0]!.id
        }
        yield* events.append({
          workspaceId,
          event: DomainEvent.make("conversation.created", {
            object: "conversation",
            object_id: id,
            conversation_id: id,
            status: "open"
          }),
          occurredAt: now
        })
        return id
      },
      dieOnDatabaseError
    )

    return { upsertConversation } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
