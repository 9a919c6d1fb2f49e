/**
 * WhatsApp LIDs (docs/API.md "Contacts"): contacts known by LID alone, the LID <-> phone number
 * mappings WhatsApp reveals per channel, and the merge of a LID contact into the phone number's
 * contact once the mapping is known (its conversations, messages, notes and group memberships move
 * over; a conversation on a channel where both had one is folded into the phone contact's).
 * Callers run these in one transaction (`LidMappings.learn`).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { ArrivalEvents, type Contacts, Ids } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { EventsRepo } from "./EventsRepo.js"
import { dieOnDatabaseError } from "./Rows.js"
import { lidMerge, type LidMergeInput, messagesSinceContact } from "./statements/LidMerge.js"

/** A contact as the LID rules see it: its id (typed while decoding), number and LID. */
export const LidContact = Schema.Struct({
  id: Ids.Id("cnt"),
  phone_number: Schema.NullOr(Schema.String),
  whatsapp_lid: Schema.NullOr(Schema.String)
})
export type LidContact = typeof LidContact.Type

export class LidRepo extends Effect.Service<LidRepo>()("@switchboard/db/LidRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo

    /** The phone number WhatsApp revealed for this LID on the channel. */
    const mappedPhone = Effect.fn("LidRepo.mappedPhone")(function*(channelId: string, lid: string) {
      const row = yield* SqlSchema.findOne({
        Request: Schema.Void,
        Result: Schema.Struct({ phone_number: Schema.String }),
        execute: () =>
          sql`SELECT phone_number FROM whatsapp_lid_mappings WHERE channel_id = ${channelId} AND lid = ${lid}`
      })(undefined)
      return Option.map(row, (r) => r.phone_number)
    }, dieOnDatabaseError)

    /** Keeps a mapping (the newest wins). */
    const remember = Effect.fn("LidRepo.remember")(
      function*(channelId: string, lid: string, phone: string, now: string) {
        yield* sql`INSERT INTO whatsapp_lid_mappings (channel_id, lid, phone_number, learned_at)
          VALUES (${channelId}, ${lid}, ${phone}, ${now})
          ON CONFLICT (channel_id, lid) DO UPDATE SET phone_number = EXCLUDED.phone_number,
            learned_at = EXCLUDED.learned_at`
      },
      dieOnDatabaseError
    )

    const contactWhere = (workspaceId: string, column: "whatsapp_lid" | "phone_number", value: string) =>
      SqlSchema.findOne({
        Request: Schema.Void,
        Result: LidContact,
        execute: () =>
          sql`SELECT id, phone_number, whatsapp_lid FROM contacts
            WHERE workspace_id = ${workspaceId} AND ${sql(column)} = ${value}`
      })(undefined)

    const byLid = Effect.fn("LidRepo.byLid")(function*(workspaceId: string, lid: string) {
      return yield* contactWhere(workspaceId, "whatsapp_lid", lid)
    }, dieOnDatabaseError)

    const byPhone = Effect.fn("LidRepo.byPhone")(function*(workspaceId: string, phone: string) {
      return yield* contactWhere(workspaceId, "phone_number", phone)
    }, dieOnDatabaseError)

    /** The contact of a LID, created (with no phone number) when missing. */
    const upsertLidContact = Effect.fn("LidRepo.upsertLidContact")(
      function*(
        workspaceId: string,
        lid: string,
        id: Contacts.Contact["id"],
        now: string,
        /** a group chat brought it in: not counted until a 1:1 conversation (`ContactCtes.counted`) */
        options: { readonly groupChatOnly?: boolean } = {}
      ) {
        const inserted = yield* sql`INSERT INTO contacts (id, workspace_id, whatsapp_lid, group_chat_only, created_at,
            updated_at) VALUES (${id}, ${workspaceId}, ${lid}, ${options.groupChatOnly === true}, ${now}, ${now})
          ON CONFLICT (workspace_id, whatsapp_lid) WHERE whatsapp_lid IS NOT NULL DO NOTHING RETURNING id`
        if (inserted.length > 0) {
          yield* events.append({ workspaceId, event: ArrivalEvents.contactCreatedEvent(id), occurredAt: now })
          return id
        }
        const existing = yield* contactWhere(workspaceId, "whatsapp_lid", lid)
        return Option.getOrThrow(existing).id
      },
      dieOnDatabaseError
    )

    /** Sets a contact's LID (a phone contact whose LID became known). */
    const setLid = Effect.fn("LidRepo.setLid")(function*(contactId: string, lid: string, now: string) {
      yield* sql`UPDATE contacts SET whatsapp_lid = ${lid}, updated_at = ${now} WHERE id = ${contactId}`
    }, dieOnDatabaseError)

    /** A LID contact's number became known: it is the number's contact now; its messages show it. */
    const setPhone = Effect.fn("LidRepo.setPhone")(function*(contactId: string, phone: string, now: string) {
      yield* sql`UPDATE contacts SET phone_number = ${phone}, updated_at = ${now} WHERE id = ${contactId}`
      yield* sql`UPDATE messages SET from_number = ${phone}
        WHERE contact_id = ${contactId} AND direction = 'inbound' AND from_number IS NULL
          AND ${messagesSinceContact(sql, "id", contactId)}`
    }, dieOnDatabaseError)

    /** Folds contact `from` (known by LID alone) into `into` (the phone number's contact): `statements/LidMerge.ts`. */
    const merge = Effect.fn("LidRepo.merge")(function*(input: LidMergeInput) {
      yield* lidMerge(sql, input)
    }, dieOnDatabaseError)

    return { mappedPhone, remember, byLid, byPhone, upsertLidContact, setLid, setPhone, merge } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
