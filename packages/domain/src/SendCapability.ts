/**
 * Whether a channel can take a send of some message type, decided from the provider's capability
 * snapshot (`message_types` of `GET /v1/channels/{id}/capabilities`). A channel whose provider
 * lacks the type refuses the send with 409 `CHANNEL_CAPABILITY_UNAVAILABLE` and
 * `details.reason = "message_type_unsupported"` (docs/API.md); the send path asks this one rule
 * for every kind it accepts, media kinds included.
 */
import type { MessageType } from "./MessageContent.js"

/**
 * The provider message type a send of `type` needs: a template is rendered here and handed to the
 * provider as text; every other kind goes as itself.
 */
export const providerMessageType = (type: MessageType): MessageType => type === "template" ? "text" : type

/** `undefined` when the provider's `messageTypes` take a send of `type`, else the refusal's reason. */
export const sendCapabilityRefusal = (
  messageTypes: ReadonlyArray<string>,
  type: MessageType
): "message_type_unsupported" | undefined =>
  messageTypes.includes(providerMessageType(type)) ? undefined : "message_type_unsupported"
