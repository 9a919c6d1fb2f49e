/**
 * The errors of every door that sends a message through the send path (`POST /v1/messages`, a
 * conversation's reply, a template's test send): one list, so the three doors cannot drift apart.
 * A door adds the errors of its own (an unknown conversation, ...) around it.
 */
import type { HttpMethod } from "@effect/platform/HttpMethod"
import { Errors } from "@switchboard/domain"
import type { Endpoint } from "./Security.js"

export const sendErrors = <Name extends string, Method extends HttpMethod, P, U, B, H, S, E, R, RE>(
  endpoint: Endpoint<Name, Method, P, U, B, H, S, E, R, RE>
) =>
  endpoint
    .addError(Errors.ChannelNotFound)
    .addError(Errors.TemplateNotFound)
    .addError(Errors.ChannelNotConnected)
    .addError(Errors.ChannelCapabilityUnavailable)
    .addError(Errors.TemplateNotSendable)
    .addError(Errors.EntitlementLimitReached)
    .addError(Errors.IdempotencyConflict)
    .addError(Errors.TemplateVariableMissing)
    .addError(Errors.SandboxTestKeyRequired)
    .addError(Errors.ProviderRateLimited)
    .addError(Errors.QrSafetyLimitReached)
    .addError(Errors.ServiceUnavailable)
