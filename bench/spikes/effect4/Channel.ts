/**
 * The spike's Channel entity on `effect/cluster` (v4): the one message the send path sends it, a
 * volatile `Wake` naming the message just queued (as packages/entities' `ChannelEntity.Wake`).
 * Shared by send4.ts (client only) and dispatch4.ts (the runner hosting it).
 */
import { Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

export const Wake = Rpc.make("Wake", { payload: { message_id: Schema.String } })

export const Channel = Entity.make("Channel", [Wake])

/**
 * Cluster tables of the spike: their own prefix, beside the project's effect 3 `cluster_*` tables
 * (`CLUSTER_TABLE_PREFIX`: the harness gives each runner fresh tables, so no shard lock of a
 * runner stopped before it is in its way).
 */
export const TABLE_PREFIX = process.env["CLUSTER_TABLE_PREFIX"] ?? "spike4"
