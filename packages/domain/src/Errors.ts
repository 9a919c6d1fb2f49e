/**
 * Every error code of the API (docs/API.md "Errors"), transport errors included, declared once with its
 * HTTP status. Endpoints list the ones they can return; the OpenAPI document shows them.
 */
import { Schema } from "effect"
import { ApiError } from "./ApiError.js"

export const ValidationIssue = Schema.Struct({
  path: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
  message: Schema.String,
  /** a template body's problems: the character (code point) where it starts, from 0 */
  position: Schema.optional(Schema.Number)
}).annotations({ identifier: "ValidationIssue" })

export class ValidationError extends ApiError<ValidationError>()("ValidationError", {
  code: "VALIDATION_ERROR",
  status: 422,
  description:
    "The request failed validation (body, query, path or headers). `details.issues[].path` names the member, `details.issues[].message` explains; submitted values are never echoed. Some refusals add `details.reason`.",
  details: Schema.Struct({
    issues: Schema.optional(Schema.Array(ValidationIssue)),
    reason: Schema.optional(Schema.String)
  }, { key: Schema.String, value: Schema.Unknown })
}) {}

export class TemplateVariableMissing extends ApiError<TemplateVariableMissing>()("TemplateVariableMissing", {
  code: "TEMPLATE_VARIABLE_MISSING",
  status: 422,
  description: "Required template variables were not supplied: `details.missing` lists every missing name.",
  details: Schema.Struct({ missing: Schema.Array(Schema.String) }, { key: Schema.String, value: Schema.Unknown })
}) {}

export class Unauthorized extends ApiError<Unauthorized>()("Unauthorized", {
  code: "UNAUTHORIZED",
  status: 401,
  description: "Missing, unknown, revoked or expired credential, or a key whose workspace is not active."
}) {}

export class InvalidCredentials extends ApiError<InvalidCredentials>()("InvalidCredentials", {
  code: "INVALID_CREDENTIALS",
  status: 401,
  description: "Login failed: unknown e-mail or wrong password."
}) {}

export class Forbidden extends ApiError<Forbidden>()("Forbidden", {
  code: "FORBIDDEN",
  status: 403,
  description:
    "The credential is valid but not allowed here: missing scope (`details.required_scopes`), API key on a session-only route, or a workspace header it may not use."
}) {}

export class EmailNotVerified extends ApiError<EmailNotVerified>()("EmailNotVerified", {
  code: "EMAIL_NOT_VERIFIED",
  status: 403,
  description: "Login with an e-mail address that is not verified yet."
}) {}

export class AccountSuspended extends ApiError<AccountSuspended>()("AccountSuspended", {
  code: "ACCOUNT_SUSPENDED",
  status: 403,
  description: "The user account is suspended."
}) {}

export class WorkspaceSuspended extends ApiError<WorkspaceSuspended>()("WorkspaceSuspended", {
  code: "WORKSPACE_SUSPENDED",
  status: 403,
  description: "The workspace is suspended."
}) {}

export class SandboxTestKeyRequired extends ApiError<SandboxTestKeyRequired>()("SandboxTestKeyRequired", {
  code: "SANDBOX_TEST_KEY_REQUIRED",
  status: 403,
  description: "Sandbox operations need a test-mode API key (`wa_test_...`)."
}) {}

export class WorkspaceContextRequired extends ApiError<WorkspaceContextRequired>()("WorkspaceContextRequired", {
  code: "WORKSPACE_CONTEXT_REQUIRED",
  status: 400,
  description: "A user access token was sent without the `X-Workspace-Id` header."
}) {}

export class NotFound extends ApiError<NotFound>()("NotFound", {
  code: "NOT_FOUND",
  status: 404,
  description: "Nothing here. `details.resource` names the kind (`route`, `message`, ...)."
}) {}

export class ApiKeyNotFound extends ApiError<ApiKeyNotFound>()("ApiKeyNotFound", {
  code: "API_KEY_NOT_FOUND",
  status: 404,
  description: "No API key with this id in the workspace."
}) {}

export class ChannelNotFound extends ApiError<ChannelNotFound>()("ChannelNotFound", {
  code: "CHANNEL_NOT_FOUND",
  status: 404,
  description: "No channel with this id in the workspace."
}) {}

export class TemplateNotFound extends ApiError<TemplateNotFound>()("TemplateNotFound", {
  code: "TEMPLATE_NOT_FOUND",
  status: 404,
  description: "No template with this slug or id (`details.id`) in the workspace."
}) {}

export class MethodNotAllowed extends ApiError<MethodNotAllowed>()("MethodNotAllowed", {
  code: "METHOD_NOT_ALLOWED",
  status: 405,
  description: "The path exists but not with this method; `Allow` and `details.allowed` list the methods."
}) {}

export class Conflict extends ApiError<Conflict>()("Conflict", {
  code: "CONFLICT",
  status: 409,
  description: "The request conflicts with the current state (e.g. a name already used); `details.reason` says which."
}) {}

export class EntitlementLimitReached extends ApiError<EntitlementLimitReached>()("EntitlementLimitReached", {
  code: "ENTITLEMENT_LIMIT_REACHED",
  status: 409,
  description: "The plan allowance is exhausted (`details.entitlement`, `details.limit`)."
}) {}

export class ChannelNotConnected extends ApiError<ChannelNotConnected>()("ChannelNotConnected", {
  code: "CHANNEL_NOT_CONNECTED",
  status: 409,
  description: "The channel is not connected and cannot send."
}) {}

export class ChannelCapabilityUnavailable extends ApiError<ChannelCapabilityUnavailable>()(
  "ChannelCapabilityUnavailable",
  {
    code: "CHANNEL_CAPABILITY_UNAVAILABLE",
    status: 409,
    description:
      "`details.reason` is `capabilities_not_refreshed`, `not_a_qr_channel`, or on a send `message_type_unsupported` (the channel's `message_types` lack the message's type)."
  }
) {}

export class TemplateNotSendable extends ApiError<TemplateNotSendable>()("TemplateNotSendable", {
  code: "TEMPLATE_NOT_SENDABLE",
  status: 409,
  description: "The template cannot be sent: it is archived (`details.reason = template_archived`)."
}) {}

export class IdempotencyConflict extends ApiError<IdempotencyConflict>()("IdempotencyConflict", {
  code: "IDEMPOTENCY_CONFLICT",
  status: 409,
  description:
    "The `Idempotency-Key` was used with a different body, or (`details.reason = in_progress`) the first request is still running."
}) {}

export class PayloadTooLarge extends ApiError<PayloadTooLarge>()("PayloadTooLarge", {
  code: "PAYLOAD_TOO_LARGE",
  status: 413,
  description: "The request body is over the size limit (`details.limit_bytes`)."
}) {}

export class UnsupportedMediaType extends ApiError<UnsupportedMediaType>()("UnsupportedMediaType", {
  code: "UNSUPPORTED_MEDIA_TYPE",
  status: 415,
  description:
    "The request body carries a `Content-Encoding` (gzip, br, ...), which no route takes (`details.reason = content_encoding`): send the body uncompressed (a file's bytes as they are)."
}) {}

export class RangeNotSatisfiable extends ApiError<RangeNotSatisfiable>()("RangeNotSatisfiable", {
  code: "RANGE_NOT_SATISFIABLE",
  status: 416,
  description: "The `Range` asked for starts past the file's end (`details.size_bytes`; `Content-Range: bytes */size`)."
}) {}

export class RateLimited extends ApiError<RateLimited>()("RateLimited", {
  code: "RATE_LIMITED",
  status: 429,
  description: "HTTP rate limit reached. `Retry-After` (seconds) and `RateLimit-*` headers say when to retry."
}) {}

export class ProviderRateLimited extends ApiError<ProviderRateLimited>()("ProviderRateLimited", {
  code: "PROVIDER_RATE_LIMITED",
  status: 429,
  description: "The channel's backlog exceeds 24 h of its provider throughput."
}) {}

export class QrSafetyLimitReached extends ApiError<QrSafetyLimitReached>()("QrSafetyLimitReached", {
  code: "QR_SAFETY_LIMIT_REACHED",
  status: 429,
  description:
    "The QR channel's rolling 24 h safety cap is reached: messages sent in the window plus those still queued (`details.limit`, `details.retry_at`; `Retry-After` in seconds)."
}) {}

export class InternalError extends ApiError<InternalError>()("InternalError", {
  code: "INTERNAL_ERROR",
  status: 500,
  description: "An unexpected failure on our side. Nothing internal is revealed; quote `X-Request-Id`."
}) {}

export class ServiceUnavailable extends ApiError<ServiceUnavailable>()("ServiceUnavailable", {
  code: "SERVICE_UNAVAILABLE",
  status: 503,
  description: "A dependency (database, dispatch queue) is unreachable; nothing was written. Retry later."
}) {}

export class SandboxNoNumberAvailable extends ApiError<SandboxNoNumberAvailable>()("SandboxNoNumberAvailable", {
  code: "SANDBOX_NO_NUMBER_AVAILABLE",
  status: 503,
  description: "Every shared sandbox number is in use."
}) {}

/** All error classes, for documentation and the contract tests. */
export const AllErrors = [
  ValidationError,
  RangeNotSatisfiable,
  TemplateVariableMissing,
  Unauthorized,
  InvalidCredentials,
  Forbidden,
  EmailNotVerified,
  AccountSuspended,
  WorkspaceSuspended,
  SandboxTestKeyRequired,
  WorkspaceContextRequired,
  NotFound,
  ApiKeyNotFound,
  ChannelNotFound,
  TemplateNotFound,
  MethodNotAllowed,
  Conflict,
  EntitlementLimitReached,
  ChannelNotConnected,
  ChannelCapabilityUnavailable,
  TemplateNotSendable,
  IdempotencyConflict,
  PayloadTooLarge,
  UnsupportedMediaType,
  RateLimited,
  ProviderRateLimited,
  QrSafetyLimitReached,
  InternalError,
  ServiceUnavailable,
  SandboxNoNumberAvailable
] as const
