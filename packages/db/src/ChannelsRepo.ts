/**
 * Channels of a workspace.
 *
 * Over 350 lines on purpose: every statement of the `channels` table, in one place (one repo per table).
 */
import { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { ChannelStateMachine, Events, Ids, Messaging, type Pagination } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { EventsRepo } from "./EventsRepo.js"
import {
  CountRow,
  decodeRows,
  dieOnDatabaseError,
  failOnUniqueViolation,
  iso,
  isoOrNull,
  TimestampColumn
} from "./Rows.js"

/** What a status move reads of its channel's row (its id typed while decoding, for the move's events). */
const MovedChannelRow = Schema.Struct({
  id: Ids.Id("ch"),
  workspace_id: Ids.Id("ws"),
  provider: Messaging.Provider,
  status: ChannelStateMachine.ChannelStatus,
  phone_number: Schema.NullOr(Schema.String)
})
const decodeMovedChannel = Schema.decodeUnknown(Schema.Array(MovedChannelRow))

/** The columns of a `channels` row that the resource and its capability snapshot read. */
const ChannelColumns = Schema.Struct({
  id: Ids.Id("ch"),
  workspace_id: Ids.Id("ws"),
  name: Schema.String,
  provider: Messaging.Provider,
  status: ChannelStateMachine.ChannelStatus,
  status_reason: Schema.NullOr(Schema.String),
  is_default: Schema.Boolean,
  phone_number: Schema.NullOr(Schema.String),
  call_policy: Schema.optionalWith(Schema.NullOr(Messaging.CallPolicy), { default: () => null }),
  capabilities: Schema.NullOr(
    Schema.Struct({ max_throughput_mps: Schema.Number, message_types: Schema.Array(Schema.String) })
  ),
  capabilities_refreshed_at: Schema.NullOr(TimestampColumn),
  pairing_started_at: Schema.NullOr(TimestampColumn),
  created_at: TimestampColumn,
  updated_at: TimestampColumn,
  archived_at: Schema.NullOr(TimestampColumn)
})

/**
 * A row of `channels` decoded to the domain's `Channel`, its `Capabilities` (none until reported)
 * and when its QR pairing began: the one shape of the resource (docs/ARCHITECTURE.md "Adding a
 * resource"). Ids checked and typed (`ch_...`, `ws_...`) while decoding, timestamps as ISO strings.
 * Also on the send path (`SendChecksRepo`): the mapper it replaces built and checked the same classes.
 */
export const ChannelRow = Schema.transform(
  ChannelColumns,
  Schema.Struct({
    channel: Messaging.Channel,
    pairingStartedAt: Schema.NullOr(Schema.String),
    capabilities: Schema.OptionFromSelf(Messaging.Capabilities)
  }),
  {
    strict: true,
    decode: ({ call_policy, capabilities, capabilities_refreshed_at: refreshedAt, pairing_started_at, ...row }) => ({
      channel: {
        ...row,
        call_policy: call_policy ?? Messaging.DEFAULT_CALL_POLICY,
        object: "channel" as const,
        created_at: iso(row.created_at),
        updated_at: iso(row.updated_at),
        archived_at: isoOrNull(row.archived_at)
      },
      pairingStartedAt: isoOrNull(pairing_started_at),
      capabilities: capabilities && refreshedAt
        ? Option.some({ channel_id: row.id, provider: row.provider, ...capabilities, refreshed_at: iso(refreshedAt) })
        : Option.none()
    }),
    encode: ({ capabilities, channel: { object: _, ...channel }, pairingStartedAt }) => ({
      ...channel,
      capabilities: Option.match(capabilities, {
        onNone: () => null,
        onSome: ({ max_throughput_mps, message_types }) => ({ max_throughput_mps, message_types })
      }),
      capabilities_refreshed_at: Option.match(capabilities, { onNone: () => null, onSome: (c) => c.refreshed_at }),
      pairing_started_at: pairingStartedAt
    })
  }
)
export type ChannelRow = typeof ChannelRow.Type
const decodeChannels = Schema.decodeUnknown(Schema.Array(ChannelRow))
const decodeCounts = decodeRows(CountRow)

export class ChannelsRepo extends Effect.Service<ChannelsRepo>()("@switchboard/db/ChannelsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo

    const insert = Effect.fn("ChannelsRepo.insert")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly name: string
      readonly provider: Messaging.Provider
      readonly status: ChannelStateMachine.ChannelStatus
      readonly isDefault: boolean
      readonly phoneNumber: string | null
      readonly capabilities:
        | { readonly max_throughput_mps: number; readonly message_types: ReadonlyArray<string> }
        | null
      readonly now: string
    }) {
      const caps = input.capabilities === null ? null : JSON.stringify(input.capabilities)
      yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, is_default, phone_number, capabilities,
          capabilities_refreshed_at, created_at, updated_at)
        VALUES (${input.id}, ${input.workspaceId}, ${input.name}, ${input.provider}, ${input.status}, ${input.isDefault},
          ${input.phoneNumber}, ${caps}::jsonb, ${caps === null ? null : input.now}, ${input.now}, ${input.now})`
    }, failOnUniqueViolation)

    const one = (where: Statement.Fragment) =>
      Effect.map(
        Effect.flatMap(sql`SELECT * FROM channels WHERE ${where}`, decodeChannels),
        (r) => Option.fromNullable(r[0])
      )

    const find = Effect.fn("ChannelsRepo.find")(function*(workspaceId: string, id: string) {
      return yield* one(sql`workspace_id = ${workspaceId} AND id = ${id}`)
    }, dieOnDatabaseError)

    /** Any workspace: for entities that only know the id. */
    const findById = Effect.fn("ChannelsRepo.findById")(function*(id: string) {
      return yield* one(sql`id = ${id}`)
    }, dieOnDatabaseError)

    const findDefault = Effect.fn("ChannelsRepo.findDefault")(function*(workspaceId: string) {
      return yield* one(sql`workspace_id = ${workspaceId} AND is_default AND archived_at IS NULL`)
    }, dieOnDatabaseError)

    const list = Effect.fn("ChannelsRepo.list")(function*(
      workspaceId: string,
      status: ChannelStateMachine.ChannelStatus | undefined,
      limit: number,
      after: Pagination.CursorPosition | undefined
    ) {
      const rows = yield* sql`SELECT * FROM channels WHERE workspace_id = ${workspaceId}
        ${status ? sql`AND status = ${status}` : sql``}
        ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
      return (yield* decodeChannels(rows)).map((r) => r.channel)
    }, dieOnDatabaseError)

    /** Renames and/or makes default (clearing the previous default) in one transaction. */
    const update = Effect.fn("ChannelsRepo.update")(function*(
      workspaceId: string,
      id: string,
      changes: {
        readonly name?: string | undefined
        isDefault?: boolean | undefined
        callPolicy?: Messaging.CallPolicy | undefined
      },
      now: string
    ) {
      const policy = changes.callPolicy === undefined ? null : JSON.stringify(changes.callPolicy)
      return yield* sql.withTransaction(Effect.gen(function*() {
        if (changes.isDefault) {
          yield* sql`UPDATE channels SET is_default = false, updated_at = ${now}
            WHERE workspace_id = ${workspaceId} AND is_default AND id <> ${id}`
        }
        const rows = yield* decodeChannels(
          yield* sql`UPDATE channels SET
            name = COALESCE(${changes.name ?? null}, name),
            is_default = is_default OR ${changes.isDefault === true},
            call_policy = COALESCE(${policy}::jsonb, call_policy),
            updated_at = ${now}
          WHERE workspace_id = ${workspaceId} AND id = ${id} AND archived_at IS NULL RETURNING *`
        )
        return Option.map(Option.fromNullable(rows[0]), (r) => r.channel)
      }))
    }, failOnUniqueViolation)

    const countProduction = Effect.fn("ChannelsRepo.countProduction")(function*(workspaceId: string) {
      const rows = yield* decodeCounts(
        yield* sql`SELECT count(*)::int AS n FROM channels
        WHERE workspace_id = ${workspaceId} AND provider <> 'sandbox' AND archived_at IS NULL`
      )
      return rows[0]?.n ?? 0
    }, dieOnDatabaseError)

    /** Whether a live channel of the workspace already has this name (case-insensitively, like the index). */
    const nameTaken = Effect.fn("ChannelsRepo.nameTaken")(function*(workspaceId: string, name: string) {
      const rows = yield* sql`SELECT 1 FROM channels
        WHERE workspace_id = ${workspaceId} AND lower(name) = lower(${name}) AND archived_at IS NULL`
      return rows.length > 0
    }, dieOnDatabaseError)

    /** Stores the provider's capability snapshot when it is new or changed. */
    const refreshCapabilities = Effect.fn("ChannelsRepo.refreshCapabilities")(function*(
      id: string,
      capabilities: { readonly max_throughput_mps: number; readonly message_types: ReadonlyArray<string> },
      now: string
    ) {
      const snapshot = JSON.stringify({
        max_throughput_mps: capabilities.max_throughput_mps,
        message_types: capabilities.message_types
      })
      yield* sql`UPDATE channels SET capabilities = ${snapshot}::jsonb, capabilities_refreshed_at = ${now}
        WHERE id = ${id} AND (capabilities_refreshed_at IS NULL OR capabilities IS DISTINCT FROM ${snapshot}::jsonb)`
    }, dieOnDatabaseError)

    /**
     * Records a status change the provider's link reported (a move of the domain's channel machine),
     * with the events `channelMoveEvents` lists, in one transaction. Never touches a channel in a
     * status only the platform changes (`PLATFORM_HELD_STATUSES`). A channel that can send gets its
     * capability snapshot. Answers whether the row changed.
     */
    const recordProviderStatus = Effect.fn("ChannelsRepo.recordProviderStatus")(function*(input: {
      readonly id: string
      readonly from: ChannelStateMachine.ChannelStatus
      readonly to: ChannelStateMachine.ChannelStatus
      readonly reason: ChannelStateMachine.ChannelStatusReason
      readonly requiresRepair: boolean
      readonly phoneNumber: string | null
      readonly capabilities: { readonly max_throughput_mps: number; readonly message_types: ReadonlyArray<string> }
      readonly now: string
    }) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql`UPDATE channels SET
            status = ${input.to}, status_reason = ${input.reason},
            phone_number = COALESCE(${input.phoneNumber}, phone_number), updated_at = ${input.now}
            ${
          // a number's first link (or a different number) starts its warm-up (QrWarmUpRepo)
          input.reason === "paired"
            ? sql`, qr_linked_at = CASE WHEN qr_linked_at IS NULL
                  OR phone_number IS DISTINCT FROM COALESCE(${input.phoneNumber}, phone_number)
                THEN ${input.now}::timestamptz ELSE qr_linked_at END`
            : sql``}
          WHERE id = ${input.id} AND status NOT IN ${sql.in(ChannelStateMachine.PLATFORM_HELD_STATUSES)}
            AND (status <> ${input.to} OR status_reason IS DISTINCT FROM ${input.reason})
          RETURNING id, workspace_id, provider, status, phone_number`
        const row = (yield* decodeMovedChannel(rows))[0]
        if (row === undefined) return false
        if (ChannelStateMachine.dispatches(input.to)) {
          yield* refreshCapabilities(input.id, input.capabilities, input.now)
        }
        const move: ChannelStateMachine.ChannelMove = {
          _tag: "Moved",
          from: input.from,
          to: input.to,
          reason: input.reason,
          requiresRepair: input.requiresRepair
        }
        for (const event of Events.channelMoveDomainEvents(row.id, move, row.phone_number)) {
          yield* events.append({ workspaceId: row.workspace_id, event, occurredAt: input.now })
        }
        return true
      }))
    }, dieOnDatabaseError)

    /**
     * Records what WhatsApp reported on a QR number (docs/LIMITS.md, "Number protection"; read by
     * `QrWarmUpRepo.facts`): the timelock's end (`null`: lifted) and/or the new-chat
     * quota, and the last restriction signal with its time (`GET .../qr/safety`); what is `undefined`
     * stays as it was.
     */
    const recordRestriction = Effect.fn("ChannelsRepo.recordRestriction")(function*(input: {
      readonly channelId: string
      readonly timelockUntil?: string | null | undefined
      readonly newChatQuota?:
        | { readonly total: number; readonly used: number; readonly cycleEndsAt: string | null }
        | undefined
      /** the status reason the report set: the channel's last restriction signal (`qr/safety`) */
      readonly signal?: { readonly reason: ChannelStateMachine.QrRestrictionReason; readonly at: string } | undefined
      readonly now: string
    }) {
      const q = input.newChatQuota
      const signal = input.signal
      yield* sql`UPDATE channels SET qr_restriction_reported_at = ${
        input.timelockUntil === undefined && q === undefined ? sql`qr_restriction_reported_at` : sql`${input.now}`
      }
        ${signal === undefined ? sql`` : sql`, qr_last_signal = ${signal.reason}, qr_last_signal_at = ${signal.at}`}
        ${input.timelockUntil === undefined ? sql`` : sql`, qr_timelock_until = ${input.timelockUntil}`}
        ${
        q === undefined ? sql`` : sql`, qr_new_chat_total = ${q.total}, qr_new_chat_used = ${q.used},
          qr_new_chat_cycle_ends_at = ${q.cycleEndsAt}`
      }
        WHERE id = ${input.channelId}`
    }, dieOnDatabaseError)

    /** Archives (no longer the default); answers whether it was not archived before. */
    const archive = Effect.fn("ChannelsRepo.archive")(function*(id: string, now: string) {
      const rows = yield* sql`UPDATE channels SET status = 'archived', is_default = false, archived_at = ${now},
          updated_at = ${now}
        WHERE id = ${id} AND status <> 'archived' RETURNING id`
      return rows.length > 0
    }, dieOnDatabaseError)

    /**
     * The operator suspends a channel (it stops sending; a QR channel's link is kept) or
     * reactivates it: a sandbox channel is `connected` again, a QR channel `disconnected` until
     * `qr/start` (which logs in with a kept link without a code). The domain's channel machine
     * decides the move and its events (`transitionChannel`, `channelMoveEvents`). `None` when no
     * such channel, or it is archived, or already in that state.
     */
    const setSuspended = Effect.fn("ChannelsRepo.setSuspended")(function*(id: string, suspend: boolean, now: string) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        const row = (yield* decodeMovedChannel(
          yield* sql`SELECT id, workspace_id, provider, status, phone_number FROM channels WHERE id = ${id} FOR UPDATE`
        ))[0]
        if (row === undefined) return Option.none<ChannelStateMachine.ChannelStatus>()
        const move = ChannelStateMachine.transitionChannel(
          row.status,
          suspend ? { _tag: "Suspend" } : { _tag: "Reactivate", provider: row.provider }
        )
        if (move._tag !== "Moved") return Option.none<ChannelStateMachine.ChannelStatus>()
        yield* sql`UPDATE channels SET status = ${move.to}, status_reason = ${move.reason}, updated_at = ${now}
          WHERE id = ${id}`
        for (const event of Events.channelMoveDomainEvents(row.id, move, row.phone_number)) {
          yield* events.append({ workspaceId: row.workspace_id, event, occurredAt: now })
        }
        return Option.some(move.to)
      }))
    }, dieOnDatabaseError)

    /**
     * The platform archives a channel (a sandbox session that expired or was revoked): the domain's
     * channel machine decides the move and its events, recorded in one transaction. Answers whether
     * the channel was archived now (false: no such channel, or already archived).
     */
    const archiveWithEvents = Effect.fn("ChannelsRepo.archiveWithEvents")(function*(id: string, now: string) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        const row = (yield* decodeMovedChannel(
          yield* sql`SELECT id, workspace_id, provider, status, phone_number FROM channels WHERE id = ${id} FOR UPDATE`
        ))[0]
        if (row === undefined) return false
        const move = ChannelStateMachine.transitionChannel(row.status, { _tag: "Archive" })
        if (move._tag !== "Moved") return false
        yield* sql`UPDATE channels SET status = 'archived', status_reason = ${move.reason}, is_default = false,
            archived_at = ${now}, updated_at = ${now}
          WHERE id = ${id}`
        for (const event of Events.channelMoveDomainEvents(row.id, move, row.phone_number)) {
          yield* events.append({ workspaceId: row.workspace_id, event, occurredAt: now })
        }
        return true
      }))
    }, dieOnDatabaseError)

    /** `qr/start` began a pairing now. */
    const markPairingStarted = Effect.fn("ChannelsRepo.markPairingStarted")(function*(id: string, now: string) {
      yield* sql`UPDATE channels SET pairing_started_at = ${now} WHERE id = ${id}`
    }, dieOnDatabaseError)

    return {
      insert,
      find,
      findById,
      findDefault,
      list,
      update,
      countProduction,
      nameTaken,
      refreshCapabilities,
      archive,
      archiveWithEvents,
      setSuspended,
      recordProviderStatus,
      recordRestriction,
      markPairingStarted
    } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
