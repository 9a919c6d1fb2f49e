/**
 * Contacts of a workspace: one per phone number, created through the API, by an import, or by
 * the first message to or from the number.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { ArrivalEvents, Contacts, Ids, type Pagination } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { EventsRepo } from "./EventsRepo.js"
import { CountRow, dieOnDatabaseError, failOnUniqueViolation } from "./Rows.js"
import {
  ContactIdRow,
  decodeContactIds,
  decodeContacts,
  decodeImported,
  decodePhones,
  decodeUpserted
} from "./rows/ContactRows.js"

export { ContactRow } from "./rows/ContactRows.js"

/**
 * Whether the contact `c` counts against the plan's `contacts` limit (docs/API.md "Contacts"):
 * every contact but one only group chats brought in (`group_chat_only`) and that has no 1:1
 * conversation yet. The one rule of every count of the limit (usage, create, import, send); the
 * function of `ContactsLimitLock.usedLocked` repeats it (a change here is a migration there too).
 */
const counted = (sql: SqlClient.SqlClient): Statement.Fragment =>
  sql`(NOT c.group_chat_only OR EXISTS (SELECT 1 FROM conversations v WHERE v.contact_id = c.id))`

/**
 * The contact of a phone number for a message, as the CTEs of one statement (the send composes
 * them with its own guards between, `SendWritesRepo`): `found` is `contact_found (id, counted)`, the
 * workspace's contact with the number; `ofNumber` (after it) inserts it under `id` when none was
 * found and `create` holds (`contact_new`), and gives `contact (id, created)`: the found one when
 * `use` holds, else the new one. Empty when a concurrent first message inserted the number after
 * the statement's snapshot: a next statement sees it.
 */
export const ContactCtes = {
  counted,
  /** The workspace's contact with this number, or with this WhatsApp LID when one is given; `counted` as above. */
  found: (sql: SqlClient.SqlClient, workspaceId: string, phone: string, lid?: string) =>
    sql`contact_found AS (
      SELECT c.id, ${counted(sql)} AS counted FROM contacts c WHERE c.workspace_id = ${workspaceId}
        AND ${lid === undefined ? sql`c.phone_number = ${phone}` : sql`c.whatsapp_lid = ${lid}`}
    )`,
  ofNumber: (sql: SqlClient.SqlClient, input: {
    readonly id: string
    readonly workspaceId: string
    readonly phone: string
    readonly now: string
    readonly create: Statement.Fragment
    readonly use: Statement.Fragment
    /** a participant a group chat brought in (not counted until a 1:1 conversation) */
    readonly groupChatOnly?: boolean
  }) =>
    sql`contact_new AS (
      INSERT INTO contacts (id, workspace_id, phone_number, group_chat_only, created_at, updated_at)
      SELECT ${input.id}, ${input.workspaceId}, ${input.phone}, ${input.groupChatOnly === true}, ${input.now},
        ${input.now}
      WHERE ${input.create} AND NOT EXISTS (SELECT 1 FROM contact_found)
      ON CONFLICT (workspace_id, phone_number) DO NOTHING
      RETURNING id
    ), contact AS (
      SELECT id, false AS created FROM contact_found WHERE ${input.use} UNION ALL SELECT id, true FROM contact_new
    )`
}

export interface ContactFields {
  readonly phoneNumber: string
  readonly name: string | null
  readonly email: string | null
  readonly attributes: Readonly<Record<string, string>>
  readonly tags: ReadonlyArray<string>
}

export interface ContactFilter {
  readonly tag?: string | undefined
  readonly groupId?: string | undefined
  /** lower-cased substring of name, phone number or e-mail */
  readonly q?: string | undefined
}

/** `%`, `_` and `\` match themselves in a LIKE pattern. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

export class ContactsRepo extends Effect.Service<ContactsRepo>()("@switchboard/db/ContactsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo

    const findId = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, phone: Schema.String }),
      Result: ContactIdRow,
      execute: ({ phone, workspaceId }) =>
        sql`SELECT id FROM contacts WHERE workspace_id = ${workspaceId} AND phone_number = ${phone}`
    })

    /** The id of the workspace's contact with this number. */
    const findIdByPhone = Effect.fn("ContactsRepo.findIdByPhone")(function*(workspaceId: string, phone: string) {
      return Option.map(yield* findId({ workspaceId, phone }), (r) => r.id)
    }, dieOnDatabaseError)

    /**
     * The contact for a number, created when missing; `created` tells which. `groupChatOnly`: a
     * group chat brought it in (a report, a group message, a mention), so a new one is not counted
     * against the plan's limit until it has a 1:1 conversation (`ContactCtes.counted`).
     */
    const upsertContact = Effect.fn("ContactsRepo.upsertContact")(
      function*(workspaceId: string, phone: string, now: string, options: { readonly groupChatOnly?: boolean } = {}) {
        const id = yield* Ids.newId("cnt")
        // two columns of one row decoded (inbound path)
        const upsert = Effect.flatMap(
          sql`WITH ${ContactCtes.found(sql, workspaceId, phone)}, ${
            ContactCtes.ofNumber(sql, {
              id,
              workspaceId,
              phone,
              now,
              create: sql`true`,
              use: sql`true`,
              groupChatOnly: options.groupChatOnly === true
            })
          } SELECT id, created FROM contact`,
          decodeUpserted
        )
        // empty only when a concurrent first message to the number inserted it: the next statement sees it
        let rows = yield* upsert
        if (!rows[0]) rows = yield* upsert
        const row = rows[0]!
        if (row.created) {
          yield* events.append({ workspaceId, event: ArrivalEvents.contactCreatedEvent(id), occurredAt: now })
        }
        return { id: row.id, created: row.created }
      },
      dieOnDatabaseError
    )

    /**
     * Inserts a contact unless its number exists: `true` when inserted. One statement, so
     * concurrent creates of one number make exactly one row.
     */
    const insert = Effect.fn("ContactsRepo.insert")(
      function*(input: ContactFields & { readonly id: string; readonly workspaceId: string; readonly now: string }) {
        const rows = yield* sql`INSERT INTO contacts
          (id, workspace_id, phone_number, name, email, attributes, tags, created_at, updated_at)
          VALUES (${input.id}, ${input.workspaceId}, ${input.phoneNumber}, ${input.name}, ${input.email},
            ${JSON.stringify(input.attributes)}::jsonb,
            ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(input.tags)}::jsonb)), ${input.now}, ${input.now})
          ON CONFLICT (workspace_id, phone_number) DO NOTHING RETURNING id`
        return rows.length > 0
      },
      dieOnDatabaseError
    )

    const select = (where: Statement.Fragment) =>
      sql`SELECT c.id, c.phone_number, c.whatsapp_lid, c.name, c.email, c.attributes, c.tags, c.whatsapp_status,
          c.whatsapp_checked_at, c.created_at, c.updated_at,
          ARRAY(SELECT m.group_id FROM contact_group_members m WHERE m.contact_id = c.id ORDER BY m.group_id)
            AS group_ids
        FROM contacts c WHERE ${where}`

    const find = Effect.fn("ContactsRepo.find")(function*(workspaceId: string, id: string) {
      const rows = yield* decodeContacts(yield* select(sql`c.workspace_id = ${workspaceId} AND c.id = ${id}`))
      return Option.fromNullable(rows[0])
    }, dieOnDatabaseError)

    /** Newest first; `LIMIT limit + 1` (see `toPage`). */
    const list = Effect.fn("ContactsRepo.list")(function*(
      workspaceId: string,
      filter: ContactFilter,
      limit: number,
      after: Pagination.CursorPosition | undefined
    ) {
      const q = filter.q === undefined ? undefined : `%${likeEscape(filter.q.toLowerCase())}%`
      const rows = yield* select(sql`c.workspace_id = ${workspaceId}
        ${filter.tag === undefined ? sql`` : sql`AND c.tags @> ARRAY[${filter.tag}]::text[]`}
        ${
        filter.groupId === undefined ? sql`` : sql`AND EXISTS (SELECT 1 FROM contact_group_members g
            WHERE g.contact_id = c.id AND g.group_id = ${filter.groupId})`
      }
        ${
        q === undefined
          ? sql``
          : sql`AND lower(coalesce(c.name, '') || ' ' || coalesce(c.phone_number, '') || ' ' || coalesce(c.email, ''))
            LIKE ${q}`
      }
        ${after ? sql`AND (c.created_at, c.id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY c.created_at DESC, c.id DESC LIMIT ${limit + 1}`)
      return yield* decodeContacts(rows)
    }, dieOnDatabaseError)

    /** Sets the given fields; `None` when no such contact. A number taken: `UniqueViolation`. */
    const update = Effect.fn("ContactsRepo.update")(function*(
      workspaceId: string,
      id: string,
      changes: Partial<ContactFields>,
      now: string
    ) {
      const rows = yield* sql`UPDATE contacts SET
          phone_number = ${changes.phoneNumber === undefined ? sql`phone_number` : sql`${changes.phoneNumber}`},
          ${
        // WhatsApp's answer (QrRecipientChecksRepo) was about the old number
        changes.phoneNumber === undefined ? sql`` : sql`
          whatsapp_status = CASE WHEN phone_number = ${changes.phoneNumber} THEN whatsapp_status END,
          whatsapp_checked_at = CASE WHEN phone_number = ${changes.phoneNumber} THEN whatsapp_checked_at END,`}
          name = ${changes.name === undefined ? sql`name` : sql`${changes.name}`},
          email = ${changes.email === undefined ? sql`email` : sql`${changes.email}`},
          attributes = ${
        changes.attributes === undefined ? sql`attributes` : sql`${JSON.stringify(changes.attributes)}::jsonb`
      },
          tags = ${
        changes.tags === undefined
          ? sql`tags`
          : sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(changes.tags)}::jsonb))`
      },
          updated_at = ${now}
        WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`
      return rows.length > 0
    }, failOnUniqueViolation)

    /** Deletes the contact (its memberships cascade); `false` when there was none. */
    const remove = Effect.fn("ContactsRepo.remove")(function*(workspaceId: string, id: string) {
      const rows = yield* sql`DELETE FROM contacts WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`
      return rows.length > 0
    }, dieOnDatabaseError)

    /** Which of `ids` are contacts of the workspace. */
    const existingIds = Effect.fn("ContactsRepo.existingIds")(
      function*(workspaceId: string, ids: ReadonlyArray<string>) {
        if (ids.length === 0) return new Set<string>()
        const rows = yield* decodeContactIds(
          yield* sql`SELECT id FROM contacts WHERE workspace_id = ${workspaceId} AND id IN ${sql.in(ids)}`
        )
        return new Set<string>(rows.map((r) => r.id))
      },
      dieOnDatabaseError
    )

    /** Which of `phones` already are contacts of the workspace. */
    const existingPhones = Effect.fn("ContactsRepo.existingPhones")(
      function*(workspaceId: string, phones: ReadonlyArray<string>) {
        if (phones.length === 0) return new Set<string>()
        const rows = yield* decodePhones(
          yield* sql`SELECT phone_number FROM contacts
          WHERE workspace_id = ${workspaceId} AND phone_number IN ${sql.in(phones)}`
        )
        return new Set(rows.map((r) => r.phone_number))
      },
      dieOnDatabaseError
    )

    /**
     * One statement for a batch of imported rows (distinct numbers): `skip` leaves existing
     * contacts alone, `update` fills in name and e-mail, merges attributes and adds the tags.
     * Returns the ids written and whether each was inserted.
     */
    const importBatch = Effect.fn("ContactsRepo.importBatch")(function*(input: {
      readonly workspaceId: string
      readonly rows: ReadonlyArray<
        {
          readonly id: string
          readonly phone: string
          readonly name: string | null
          readonly email: string | null
          readonly attributes: Record<string, string>
        }
      >
      readonly tags: ReadonlyArray<string>
      readonly onConflict: "skip" | "update"
      readonly now: string
    }) {
      if (input.rows.length === 0) return []
      const conflict = input.onConflict === "skip"
        ? sql`DO NOTHING`
        : sql`DO UPDATE SET name = COALESCE(EXCLUDED.name, contacts.name),
            email = COALESCE(EXCLUDED.email, contacts.email),
            attributes = contacts.attributes || EXCLUDED.attributes,
            tags = ARRAY(SELECT DISTINCT t FROM unnest(contacts.tags || EXCLUDED.tags) AS u(t) ORDER BY t),
            updated_at = EXCLUDED.updated_at`
      const rows = yield* decodeImported(
        yield* sql`INSERT INTO contacts
          (id, workspace_id, phone_number, name, email, attributes, tags, created_at, updated_at)
        SELECT r.id, ${input.workspaceId}, r.phone, r.name, r.email, r.attributes,
          ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(input.tags)}::jsonb)),
          ${input.now}::timestamptz, ${input.now}::timestamptz
        FROM jsonb_to_recordset(${JSON.stringify(input.rows)}::jsonb)
          AS r(id text, phone text, name text, email text, attributes jsonb)
        ON CONFLICT (workspace_id, phone_number) ${conflict}
        RETURNING id, (xmax = 0) AS inserted`
      )
      return rows.map((r) => ({ id: r.id, inserted: r.inserted }))
    }, dieOnDatabaseError)

    /** A tag with how many contacts carry it, decoded to the domain's `ContactTag`. */
    const TagRow = Schema.transform(Schema.Struct({ tag: Schema.String, n: Schema.Number }), Contacts.ContactTag, {
      strict: true,
      decode: ({ n, tag }) => ({ object: "contact_tag" as const, tag, contact_count: n }),
      encode: ({ contact_count, tag }) => ({ tag, n: contact_count })
    })
    /** The workspace's tags by name (byte order: keyset and order agree everywhere), `limit + 1` after `after`. */
    const tagCounts = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: Schema.String, limit: Schema.Number, after: Schema.NullOr(Schema.String) }),
      Result: TagRow,
      execute: ({ after, limit, workspaceId }) =>
        sql`SELECT t.tag, count(*)::int AS n FROM contacts c, unnest(c.tags) AS t(tag)
          WHERE c.workspace_id = ${workspaceId}
          ${after === null ? sql`` : sql`AND t.tag COLLATE "C" > ${after} COLLATE "C"`}
          GROUP BY t.tag ORDER BY t.tag COLLATE "C" LIMIT ${limit + 1}`
    })
    const tags = Effect.fn("ContactsRepo.tags")(
      function*(workspaceId: string, limit: number, after: string | undefined) {
        return yield* tagCounts({ workspaceId, limit, after: after ?? null })
      },
      dieOnDatabaseError
    )

    /** How many contacts of the workspace count against the plan's `contacts` limit (`ContactCtes.counted`). */
    const count = SqlSchema.findOne({
      Request: Schema.String,
      Result: CountRow,
      execute: (workspaceId) =>
        sql`SELECT count(*)::int AS n FROM contacts c WHERE c.workspace_id = ${workspaceId} AND ${
          ContactCtes.counted(sql)
        }`
    })
    const countForWorkspace = Effect.fn("ContactsRepo.countForWorkspace")(function*(workspaceId: string) {
      return Option.match(yield* count(workspaceId), { onNone: () => 0, onSome: (row) => row.n })
    }, dieOnDatabaseError)

    return {
      upsertContact,
      findIdByPhone,
      insert,
      find,
      list,
      update,
      remove,
      existingIds,
      existingPhones,
      importBatch,
      tags,
      countForWorkspace
    } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
