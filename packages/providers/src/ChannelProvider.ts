/**
 * What every channel provider offers the Channel entity that owns its connection: sending with
 * OUR message id as the provider's message id (so a repeated dispatch is recognised), and a
 * stream of receipts. Sandbox implements it now; the QR (Baileys) provider plugs in the same way.
 */
import type { Channel } from "@switchboard/domain"
import type { Effect, Scope, Stream } from "effect"

export interface OutgoingMessage {
  readonly id: string
  readonly to: string
  readonly body: string
  /** failed dispatch attempts so far */
  readonly attempts: number
}

export type SendResult =
  | { readonly _tag: "Accepted" }
  | { readonly _tag: "Failed"; readonly retryable: boolean; readonly code: string; readonly reason: string }

export interface Receipt {
  readonly messageId: string
  readonly status: "sent" | "delivered" | "read"
}

export interface ChannelConnection {
  readonly send: (message: OutgoingMessage) => Effect.Effect<SendResult>
  readonly receipts: Stream.Stream<Receipt>
  readonly capabilities: { readonly max_throughput_mps: number; readonly message_types: ReadonlyArray<string> }
}

export interface ChannelProvider {
  /** Opens the channel's connection for as long as the scope lives. */
  readonly connect: (channel: Channel) => Effect.Effect<ChannelConnection, never, Scope.Scope>
}
