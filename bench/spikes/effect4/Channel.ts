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

/** Cluster tables of the spike: its own prefix, beside the project's effect 3 `cluster_*` tables. */
export const TABLE_PREFIX = "spike4"
