/** The WebhookEndpoint entity's protocol (the live handlers are in `WebhookEndpointEntity.ts`). */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"

export const WakeEndpoint = Rpc.make("Wake")

export const WebhookEndpointEntity = Entity.make("WebhookEndpoint", [WakeEndpoint])
