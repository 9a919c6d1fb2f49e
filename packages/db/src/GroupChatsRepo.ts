/**
 * Group chats of QR channels and their participants (`group_chats`, `group_chat_participants`;
 * docs/API.md "Group chats"): kept as WhatsApp reports them, read by the API.
 */
import { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { GroupChats, Ids, type Pagination } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { decodeRows, dieOnDatabaseError, IdRow, iso, TimestampColumn } from "./Rows.js"

const Columns = Schema.Struct({
  id: Ids.Id("gch"),
  channel_id: Ids.Id("ch"),
  whatsapp_group_id: Schema.String,
  subject: Schema.String,
  description: Schema.NullOr(Schema.String),
  participant_count: Schema.Number,
  is_admin: Schema.Boolean,
  announce_only: Schema.Boolean,
  is_participant: Schema.Boolean,
  created_at: TimestampColumn,
  updated_at: TimestampColumn
})

/** A `group_chats` row with its participant count, decoded to the domain's `GroupChat`. */
const GroupChatRow = Schema.transform(Columns, GroupChats.GroupChat, {
  strict: true,
  decode: (row) => ({
    ...row,
    object: "group_chat" as const,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  }),
  encode: ({ object: _, ...chat }) => chat
})
const decodeGroupChats = Schema.decodeUnknown(Schema.Array(GroupChatRow))
const decodeParticipants = Schema.decodeUnknown(Schema.Array(GroupChats.GroupChatParticipant))
const decodeGroupChatIds = decodeRows(IdRow("gch"))

export class GroupChatsRepo extends Effect.Service<GroupChatsRepo>()("@switchboard/db/GroupChatsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const select = (where: Statement.Fragment) =>
      sql`SELECT g.id, g.channel_id, g.whatsapp_group_id, g.subject, g.description, g.is_admin, g.announce_only,
          g.is_participant, g.created_at, g.updated_at,
          (SELECT count(*)::int FROM group_chat_participants p WHERE p.group_chat_id = g.id) AS participant_count
        FROM group_chats g WHERE ${where}`

    /**
     * The group chat of (channel, WhatsApp group) as reported now, created when new (with `id`); our
     * number is in it. Its id either way.
     */
    const upsert = Effect.fn("GroupChatsRepo.upsert")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly channelId: string
      readonly groupChat: GroupChats.ProviderGroupChat
      readonly now: string
    }) {
      const g = input.groupChat
      const rows = yield* decodeGroupChatIds(
        yield* sql`INSERT INTO group_chats (id, workspace_id, channel_id, whatsapp_group_id,
          subject, description, announce_only, is_admin, is_participant, created_at, updated_at)
        VALUES (${input.id}, ${input.workspaceId}, ${input.channelId}, ${g.whatsappGroupId}, ${g.subject},
          ${g.description}, ${g.announceOnly}, ${g.isAdmin}, true, ${input.now}, ${input.now})
        ON CONFLICT (channel_id, whatsapp_group_id) DO UPDATE SET subject = excluded.subject,
          description = excluded.description, announce_only = excluded.announce_only, is_admin = excluded.is_admin,
          is_participant = true,
          -- a report that changes nothing leaves the time of the last change
          updated_at = CASE WHEN (group_chats.subject, group_chats.description, group_chats.announce_only,
              group_chats.is_admin, group_chats.is_participant)
            IS DISTINCT FROM (excluded.subject, excluded.description, excluded.announce_only, excluded.is_admin, true)
            THEN excluded.updated_at ELSE group_chats.updated_at END
        RETURNING id`
      )
      return rows[0]!.id
    }, dieOnDatabaseError)

    /**
     * The participants of a group chat are exactly these contacts, with their roles; when that
     * changed anything, the group chat's `updated_at` becomes `now`.
     */
    const setParticipants = Effect.fn("GroupChatsRepo.setParticipants")(function*(
      groupChatId: string,
      participants: ReadonlyArray<{ readonly contactId: string; readonly role: GroupChats.GroupChatRole }>,
      now: string
    ) {
      const ids = participants.map((p) => p.contactId)
      // a seat whose contact was deleted (`releaseContact`) gives way to the contact reported now
      const gone = yield* ids.length === 0
        ? sql`DELETE FROM group_chat_participants WHERE group_chat_id = ${groupChatId} RETURNING contact_id`
        : sql`DELETE FROM group_chat_participants WHERE group_chat_id = ${groupChatId}
          AND (contact_id IS NULL OR contact_id NOT IN ${sql.in(ids)}) RETURNING contact_id`
      const changed = participants.length === 0 ?
        [] :
        yield* sql`INSERT INTO group_chat_participants ${
          sql.insert(participants.map((p) => ({ group_chat_id: groupChatId, contact_id: p.contactId, role: p.role })))
        } ON CONFLICT (group_chat_id, contact_id) DO UPDATE SET role = excluded.role
        WHERE group_chat_participants.role IS DISTINCT FROM excluded.role RETURNING contact_id`
      if (gone.length + changed.length === 0) return
      yield* sql`UPDATE group_chats SET updated_at = ${now} WHERE id = ${groupChatId} AND updated_at < ${now}`
    }, dieOnDatabaseError)

    /**
     * A contact of the workspace is being deleted: its seats in group chats stay (WhatsApp's
     * membership is not the address book's), with `contact_id` null and the number and LID it
     * had, until the channel next reads the group. Run before the contact's row goes, in its
     * transaction.
     */
    const releaseContact = Effect.fn("GroupChatsRepo.releaseContact")(
      function*(workspaceId: string, contactId: string) {
        yield* sql`UPDATE group_chat_participants p SET contact_id = NULL, phone_number = c.phone_number,
            whatsapp_lid = c.whatsapp_lid
          FROM contacts c WHERE c.id = p.contact_id AND c.workspace_id = ${workspaceId} AND c.id = ${contactId}`
      },
      dieOnDatabaseError
    )

    /**
     * A participant whose contact was deleted wrote in the group chat, and has a contact again:
     * its seat (`releaseContact`: same number or LID) names that contact.
     */
    const reseat = Effect.fn("GroupChatsRepo.reseat")(function*(groupChatId: string, contactId: string) {
      yield* sql`UPDATE group_chat_participants p SET contact_id = c.id, phone_number = NULL, whatsapp_lid = NULL
        FROM contacts c WHERE c.id = ${contactId} AND p.group_chat_id = ${groupChatId} AND p.contact_id IS NULL
          AND (p.phone_number = c.phone_number OR p.whatsapp_lid = c.whatsapp_lid)
          AND NOT EXISTS (SELECT 1 FROM group_chat_participants o
            WHERE o.group_chat_id = ${groupChatId} AND o.contact_id = c.id)`
    }, dieOnDatabaseError)

    /**
     * Our number is no longer in these group chats of the channel (WhatsApp's ids): `left`, or,
     * with `except`, every group chat of the channel but those (a complete list at link open).
     */
    const markLeft = Effect.fn("GroupChatsRepo.markLeft")(function*(
      channelId: string,
      groups: { readonly left: ReadonlyArray<string> } | { readonly except: ReadonlyArray<string> },
      now: string
    ) {
      const which = "left" in groups
        ? groups.left.length === 0 ? sql`false` : sql`whatsapp_group_id IN ${sql.in(groups.left)}`
        : groups.except.length === 0
        ? sql`true`
        : sql`whatsapp_group_id NOT IN ${sql.in(groups.except)}`
      yield* sql`UPDATE group_chats SET is_participant = false, is_admin = false, updated_at = ${now}
        WHERE channel_id = ${channelId} AND is_participant AND ${which}`
    }, dieOnDatabaseError)

    /** A channel's group chats, newest first (keyset on `created_at`, `id`). */
    const list = Effect.fn("GroupChatsRepo.list")(function*(
      workspaceId: string,
      channelId: string,
      limit: number,
      after: Pagination.CursorPosition | undefined
    ) {
      const rows = yield* select(sql`g.workspace_id = ${workspaceId} AND g.channel_id = ${channelId}
        ${after ? sql`AND (g.created_at, g.id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY g.created_at DESC, g.id DESC LIMIT ${limit + 1}`)
      return yield* decodeGroupChats(rows)
    }, dieOnDatabaseError)

    /** A group chat of the workspace with its participants (admins first, then by number). */
    const find = Effect.fn("GroupChatsRepo.find")(function*(workspaceId: string, id: string) {
      const found = (yield* decodeGroupChats(yield* select(sql`g.workspace_id = ${workspaceId} AND g.id = ${id}`)))[0]
      if (found === undefined) return Option.none<GroupChats.GroupChatDetail>()
      const participants = yield* decodeParticipants(
        // a seat whose contact was deleted shows the number and LID it had (`releaseContact`)
        yield* sql`SELECT p.contact_id, COALESCE(c.phone_number, p.phone_number) AS phone_number,
            COALESCE(c.whatsapp_lid, p.whatsapp_lid) AS whatsapp_lid, p.role
          FROM group_chat_participants p LEFT JOIN contacts c ON c.id = p.contact_id
          WHERE p.group_chat_id = ${id}
          ORDER BY CASE p.role WHEN 'superadmin' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END,
            COALESCE(c.phone_number, p.phone_number) NULLS LAST, p.contact_id NULLS LAST`
      )
      return Option.some(new GroupChats.GroupChatDetail({ ...found, participants }))
    }, dieOnDatabaseError)

    /** A group chat of the workspace, without its participants (what a send to it checks). */
    const get = Effect.fn("GroupChatsRepo.get")(function*(workspaceId: string, id: string) {
      const rows = yield* select(sql`g.workspace_id = ${workspaceId} AND g.id = ${id}`)
      return Option.fromNullable((yield* decodeGroupChats(rows))[0])
    }, dieOnDatabaseError)

    /** The group chat of (channel, WhatsApp group), if kept. */
    const byWhatsAppId = Effect.fn("GroupChatsRepo.byWhatsAppId")(
      function*(channelId: string, whatsappGroupId: string) {
        const rows = yield* select(sql`g.channel_id = ${channelId} AND g.whatsapp_group_id = ${whatsappGroupId}`)
        return Option.fromNullable((yield* decodeGroupChats(rows))[0])
      },
      dieOnDatabaseError
    )

    /**
     * The id of the group chat of (channel, WhatsApp group) an inbound message was written in;
     * one WhatsApp has not described yet (a message before the group's first read) is kept from
     * now on with an empty subject, which the channel's next read of the group fills in.
     */
    const idForMessage = Effect.fn("GroupChatsRepo.idForMessage")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly channelId: string
      readonly whatsappGroupId: string
      readonly now: string
    }) {
      const kept = () =>
        Effect.flatMap(
          sql`SELECT id FROM group_chats
          WHERE channel_id = ${input.channelId} AND whatsapp_group_id = ${input.whatsappGroupId}`,
          decodeGroupChatIds
        )
      const found = (yield* kept())[0]
      if (found !== undefined) return found.id
      yield* sql`INSERT INTO group_chats (id, workspace_id, channel_id, whatsapp_group_id, subject, description,
          announce_only, is_admin, is_participant, created_at, updated_at)
        VALUES (${input.id}, ${input.workspaceId}, ${input.channelId}, ${input.whatsappGroupId}, '', NULL,
          false, false, true, ${input.now}, ${input.now})
        ON CONFLICT (channel_id, whatsapp_group_id) DO NOTHING`
      return (yield* kept())[0]!.id
    }, dieOnDatabaseError)

    return {
      upsert,
      setParticipants,
      releaseContact,
      reseat,
      markLeft,
      list,
      find,
      get,
      byWhatsAppId,
      idForMessage
    } as const
  })
}) {}
