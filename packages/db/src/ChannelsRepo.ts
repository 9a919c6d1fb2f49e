/** Channels of a workspace. */
import { SqlClient } from "@effect/sql"
import { Capabilities, Channel } from "@switchboard/domain"
import type { ChannelStatus, CursorPosition, Provider } from "@switchboard/domain"
import { Effect, Option } from "effect"
import { iso, isoOrNull } from "./Rows.js"

export interface ChannelRow {
  readonly channel: Channel
  readonly capabilities: Option.Option<Capabilities>
}

export const toChannel = (r: any): Channel =>
  new Channel({
    id: r.id,
    object: "channel",
    workspace_id: r.workspace_id,
    name: r.name,
    provider: r.provider,
    status: r.status,
    status_reason: r.status_reason ?? null,
    is_default: r.is_default,
    phone_number: r.phone_number ?? null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    archived_at: isoOrNull(r.archived_at)
  })

const toRow = (r: any): ChannelRow => ({
  channel: toChannel(r),
  capabilities: r.capabilities && r.capabilities_refreshed_at
    ? Option.some(
      new Capabilities({
        channel_id: r.id,
        provider: r.provider,
        ...r.capabilities,
        refreshed_at: iso(r.capabilities_refreshed_at)
      })
    )
    : Option.none()
})

export class ChannelsRepo extends Effect.Service<ChannelsRepo>()("@switchboard/db/ChannelsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = Effect.fn("ChannelsRepo.insert")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly name: string
      readonly provider: Provider
      readonly status: ChannelStatus
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
    })

    const find = Effect.fn("ChannelsRepo.find")(function*(workspaceId: string, id: string) {
      const rows = yield* sql`SELECT * FROM channels WHERE workspace_id = ${workspaceId} AND id = ${id}`
      return Option.map(Option.fromNullable(rows[0]), toRow)
    }, Effect.orDie)

    /** Any workspace: for entities that only know the id. */
    const findById = Effect.fn("ChannelsRepo.findById")(function*(id: string) {
      const rows = yield* sql`SELECT * FROM channels WHERE id = ${id}`
      return Option.map(Option.fromNullable(rows[0]), toRow)
    }, Effect.orDie)

    const findDefault = Effect.fn("ChannelsRepo.findDefault")(function*(workspaceId: string) {
      const rows =
        yield* sql`SELECT * FROM channels WHERE workspace_id = ${workspaceId} AND is_default AND archived_at IS NULL`
      return Option.map(Option.fromNullable(rows[0]), toRow)
    }, Effect.orDie)

    const list = Effect.fn("ChannelsRepo.list")(function*(
      workspaceId: string,
      status: ChannelStatus | undefined,
      limit: number,
      after: CursorPosition | undefined
    ) {
      const rows = yield* sql`SELECT * FROM channels WHERE workspace_id = ${workspaceId}
        ${status ? sql`AND status = ${status}` : sql``}
        ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
      return rows.map((r) => toChannel(r))
    }, Effect.orDie)

    /** Renames and/or makes default (clearing the previous default) in one transaction. */
    const update = Effect.fn("ChannelsRepo.update")(function*(
      workspaceId: string,
      id: string,
      changes: { readonly name?: string | undefined; readonly isDefault?: boolean | undefined },
      now: string
    ) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        if (changes.isDefault) {
          yield* sql`UPDATE channels SET is_default = false, updated_at = ${now}
            WHERE workspace_id = ${workspaceId} AND is_default AND id <> ${id}`
        }
        const rows = yield* sql`UPDATE channels SET
            name = COALESCE(${changes.name ?? null}, name),
            is_default = is_default OR ${changes.isDefault === true},
            updated_at = ${now}
          WHERE workspace_id = ${workspaceId} AND id = ${id} AND archived_at IS NULL RETURNING *`
        return Option.map(Option.fromNullable(rows[0]), toChannel)
      }))
    })

    const countProduction = Effect.fn("ChannelsRepo.countProduction")(function*(workspaceId: string) {
      const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM channels
        WHERE workspace_id = ${workspaceId} AND provider <> 'sandbox' AND archived_at IS NULL`
      return rows[0]?.n ?? 0
    }, Effect.orDie)

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
    }, Effect.orDie)

    return { insert, find, findById, findDefault, list, update, countProduction, refreshCapabilities } as const
  })
}) {}
