/**
 * WhatsApp LIDs (docs/API.md "Contacts"): contacts known by LID alone, the LID <-> phone number
 * mappings WhatsApp reveals per channel, and the merge of a LID contact into the phone number's
 * contact once the mapping is known (its conversations, messages, notes and group memberships move
 * over; a conversation on a channel where both had one is folded into the phone contact's).
 * Callers run these in one transaction (`LidMappings.learn`).
 */
import { SqlClient } from "@effect/sql"
import { ArrivalEvents } from "@switchboard/domain"
import { Effect, Option } from "effect"
import { EventsRepo } from "./EventsRepo.js"
import { dieOnDatabaseError } from "./Rows.js"

export interface LidContact {
  readonly id: string
  readonly phone_number: string | null
  readonly whatsapp_lid: string | null
}

export class LidRepo extends Effect.Service<LidRepo>()("@switchboard/db/LidRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo

    /** The phone number WhatsApp revealed for this LID on the channel. */
    const mappedPhone = Effect.fn("LidRepo.mappedPhone")(function*(channelId: string, lid: string) {
      const rows = yield* sql<{ phone_number: string }>`SELECT phone_number FROM whatsapp_lid_mappings
        WHERE channel_id = ${channelId} AND lid = ${lid}`
      return Option.fromNullable(rows[0]?.phone_number)
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
      Effect.map(
        sql<LidContact>`SELECT id, phone_number, whatsapp_lid FROM contacts
          WHERE workspace_id = ${workspaceId} AND ${sql(column)} = ${value}`,
        (rows) => Option.fromNullable(rows[0])
      )

    const byLid = Effect.fn("LidRepo.byLid")(function*(workspaceId: string, lid: string) {
      return yield* contactWhere(workspaceId, "whatsapp_lid", lid)
    }, dieOnDatabaseError)

    const byPhone = Effect.fn("LidRepo.byPhone")(function*(workspaceId: string, phone: string) {
      return yield* contactWhere(workspaceId, "phone_number", phone)
    }, dieOnDatabaseError)

    /** The contact of a LID, created (with no phone number) when missing. */
    const upsertLidContact = Effect.fn("LidRepo.upsertLidContact")(
      function*(workspaceId: string, lid: string, id: string, now: string) {
        const inserted = yield* sql<{ id: string }>`INSERT INTO contacts (id, workspace_id, whatsapp_lid, created_at,
            updated_at) VALUES (${id}, ${workspaceId}, ${lid}, ${now}, ${now})
          ON CONFLICT (workspace_id, whatsapp_lid) WHERE whatsapp_lid IS NOT NULL DO NOTHING RETURNING id`
        if (inserted[0]) {
          yield* events.append({
            workspaceId,
            event: ArrivalEvents.contactCreatedEvent(id as `cnt_${string}`),
            occurredAt: now
          })
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
        WHERE contact_id = ${contactId} AND direction = 'inbound' AND from_number IS NULL`
    }, dieOnDatabaseError)

    /** Folds contact `from` (known by LID alone) into `into` (the phone number's contact). */
    const merge = Effect.fn("LidRepo.merge")(function*(input: {
      readonly from: string
      readonly into: string
      readonly phone: string
      readonly lid: string
      readonly now: string
    }) {
      const { from, into, now } = input
      // a channel where both have a conversation: one conversation, the phone contact's
      yield* sql`UPDATE messages m SET conversation_id = i.id
        FROM conversations f JOIN conversations i ON i.channel_id = f.channel_id AND i.contact_id = ${into}
        WHERE f.contact_id = ${from} AND m.conversation_id = f.id`
      yield* sql`UPDATE conversation_notes n SET conversation_id = i.id
        FROM conversations f JOIN conversations i ON i.channel_id = f.channel_id AND i.contact_id = ${into}
        WHERE f.contact_id = ${from} AND n.conversation_id = f.id`
      yield* sql`UPDATE conversations i SET
          last_message_at = GREATEST(i.last_message_at, f.last_message_at),
          last_inbound_at = GREATEST(i.last_inbound_at, f.last_inbound_at), updated_at = ${now}
        FROM conversations f WHERE f.channel_id = i.channel_id AND f.contact_id = ${from} AND i.contact_id = ${into}`
      yield* sql`DELETE FROM conversations f WHERE f.contact_id = ${from}
        AND EXISTS (SELECT 1 FROM conversations i WHERE i.channel_id = f.channel_id AND i.contact_id = ${into})`
      yield* sql`UPDATE conversations SET contact_id = ${into}, updated_at = ${now} WHERE contact_id = ${from}`
      yield* sql`UPDATE messages SET contact_id = ${into},
          from_number = CASE WHEN direction = 'inbound' THEN COALESCE(from_number, ${input.phone}) ELSE from_number END
        WHERE contact_id = ${from}`
      yield* sql`INSERT INTO contact_group_members (group_id, contact_id, created_at)
        SELECT group_id, ${into}, created_at FROM contact_group_members WHERE contact_id = ${from}
        ON CONFLICT DO NOTHING`
      yield* sql`UPDATE contacts i SET name = COALESCE(i.name, f.name), email = COALESCE(i.email, f.email),
          attributes = f.attributes || i.attributes,
          tags = ARRAY(SELECT DISTINCT t FROM unnest(i.tags || f.tags) AS u(t) ORDER BY t), updated_at = ${now}
        FROM contacts f WHERE i.id = ${into} AND f.id = ${from}`
      yield* sql`DELETE FROM contacts WHERE id = ${from}`
      yield* sql`UPDATE contacts SET whatsapp_lid = ${input.lid} WHERE id = ${into}`
    }, dieOnDatabaseError)

    return { mappedPhone, remember, byLid, byPhone, upsertLidContact, setLid, setPhone, merge } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
