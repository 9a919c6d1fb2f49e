/** Contacts of a workspace: one per phone number, created by the first message to or from it. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { DomainEvent, newId } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { EventsRepo } from "./EventsRepo.js"
import { CountRow, dieOnDatabaseError } from "./Rows.js"

const IdRow = Schema.Struct({ id: Schema.String })

export class ContactsRepo extends Effect.Service<ContactsRepo>()("@switchboard/db/ContactsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo

    const findId = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, phone: Schema.String }),
      Result: IdRow,
      execute: ({ phone, workspaceId }) =>
        sql`SELECT id FROM contacts WHERE workspace_id = ${workspaceId} AND phone_number = ${phone}`
    })

    /** The contact for a number, created when missing; `created` tells which. */
    const upsertContact = Effect.fn("ContactsRepo.upsertContact")(
      function*(workspaceId: string, phone: string, now: string) {
        const existing = yield* findId({ workspaceId, phone })
        if (Option.isSome(existing)) return { id: existing.value.id, created: false }
        const id = yield* newId("cnt")
        const inserted = yield* sql<
          typeof IdRow.Type
        >`INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at)
        VALUES (${id}, ${workspaceId}, ${phone}, ${now}, ${now})
        ON CONFLICT (workspace_id, phone_number) DO NOTHING RETURNING id`
        if (inserted[0]) {
          yield* events.append({
            workspaceId,
            event: DomainEvent.make("contact.created", { object: "contact", object_id: id, contact_id: id }),
            occurredAt: now
          })
          return { id, created: true }
        }
        // a concurrent first message to the same number inserted it
        const again = yield* findId({ workspaceId, phone })
        return { id: Option.getOrThrow(again).id, created: false }
      },
      dieOnDatabaseError
    )

    /** How many contacts the workspace has (the plan's `contacts` limit). */
    const count = SqlSchema.findOne({
      Request: Schema.String,
      Result: CountRow,
      execute: (workspaceId) => sql`SELECT count(*)::int AS n FROM contacts WHERE workspace_id = ${workspaceId}`
    })
    const countForWorkspace = Effect.fn("ContactsRepo.countForWorkspace")(function*(workspaceId: string) {
      return Option.match(yield* count(workspaceId), { onNone: () => 0, onSome: (row) => row.n })
    }, dieOnDatabaseError)

    return { upsertContact, countForWorkspace } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
