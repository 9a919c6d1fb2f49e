/** Internal notes on a conversation: never sent to the contact. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Conversations, Ids, type Pagination } from "@switchboard/domain"
import { Effect, Schema } from "effect"
import { dieOnDatabaseError, iso, TimestampColumn } from "./Rows.js"

/**
 * A `conversation_notes` row decoded to the domain's `ConversationNote`: the one shape of the
 * resource (docs/ARCHITECTURE.md "Adding a resource"). The ids are checked and typed (`nte_...`,
 * `cnv_...`) while decoding, the author's columns become `author`, the timestamp the wire's ISO
 * string; no mapper, no cast.
 */
export const NoteRow = Schema.transform(
  Schema.Struct({
    id: Ids.Id("nte"),
    conversation_id: Ids.Id("cnv"),
    body: Schema.String,
    author_type: Schema.Literal("user", "api_key"),
    author_id: Schema.String,
    created_at: TimestampColumn
  }),
  Conversations.ConversationNote,
  {
    strict: true,
    decode: ({ author_id, author_type, ...row }) => ({
      ...row,
      object: "conversation_note" as const,
      author: { type: author_type, id: author_id },
      created_at: iso(row.created_at)
    }),
    encode: ({ author, object: _, ...note }) => ({ ...note, author_type: author.type, author_id: author.id })
  }
)

export interface NoteInput {
  readonly id: string
  readonly workspaceId: string
  readonly conversationId: string
  readonly body: string
  readonly authorType: "user" | "api_key"
  readonly authorId: string
  readonly now: string
}

export class ConversationNotesRepo extends Effect.Service<ConversationNotesRepo>()(
  "@switchboard/db/ConversationNotesRepo",
  {
    effect: Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const insertOne = SqlSchema.single({
        Request: Schema.Struct({
          id: Schema.String,
          workspaceId: Schema.String,
          conversationId: Schema.String,
          body: Schema.String,
          authorType: Schema.Literal("user", "api_key"),
          authorId: Schema.String,
          now: Schema.String
        }),
        Result: NoteRow,
        execute: (n) =>
          sql`INSERT INTO conversation_notes (id, workspace_id, conversation_id, body, author_type, author_id, created_at)
          VALUES (${n.id}, ${n.workspaceId}, ${n.conversationId}, ${n.body}, ${n.authorType}, ${n.authorId}, ${n.now})
          RETURNING *`
      })

      const insert = Effect.fn("ConversationNotesRepo.insert")(function*(input: NoteInput) {
        // an INSERT ... RETURNING always has its row
        return yield* insertOne(input).pipe(Effect.catchTag("NoSuchElementException", Effect.die))
      }, dieOnDatabaseError)

      const list = Effect.fn("ConversationNotesRepo.list")(function*(
        conversationId: string,
        limit: number,
        after: Pagination.CursorPosition | undefined
      ) {
        const rows = yield* SqlSchema.findAll({
          Request: Schema.Void,
          Result: NoteRow,
          execute: () =>
            sql`SELECT * FROM conversation_notes WHERE conversation_id = ${conversationId}
            ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
            ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
        })(undefined)
        return rows
      }, dieOnDatabaseError)

      return { insert, list } as const
    })
  }
) {}
