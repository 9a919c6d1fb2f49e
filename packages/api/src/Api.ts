/**
 * The Switchboard HTTP contract. One group per resource; the server implements it, the SDK's
 * typed client and the OpenAPI document are derived from it.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { InternalError, MethodNotAllowed, NotFound, PayloadTooLarge, ValidationError } from "@switchboard/domain"
import { ApiKeysApi } from "./ApiKeysApi.js"
import { AuthApi, SessionApi } from "./AuthApi.js"
import { HealthApi } from "./HealthApi.js"
import { ChannelsApi, MessagesApi, SandboxApi } from "./MessagingApi.js"
import { PlanApi } from "./PlanApi.js"
import { QrPairingApi } from "./QrPairingApi.js"
import { TemplatesApi } from "./TemplatesApi.js"
import { WebhooksApi } from "./WebhooksApi.js"

const DESCRIPTION = `Provider-independent messaging API.

Conventions: JSON members are snake_case; ids are a prefix plus a ULID; timestamps are ISO 8601 UTC
with milliseconds. Every error is \`{"error":{"code","message","details"}}\` with \`details\` always an
object; validation failures are 422 \`VALIDATION_ERROR\` with \`details.issues[].path\` and
\`.message\` (submitted values are never echoed back). Unknown routes are 404 \`NOT_FOUND\` with
\`details.resource = "route"\`; a known path with another method is 405 \`METHOD_NOT_ALLOWED\` with an
\`Allow\` header. Bodies over 1 MiB (announced or chunked) are 413 \`PAYLOAD_TOO_LARGE\`. Every response carries
\`X-Request-Id\` (a valid incoming one, 1..128 of \`[A-Za-z0-9._-]\`, is echoed).

Hostile input, the same on every route: a request body must be \`application/json\` (form-encoded,
text or multipart bodies are 422 \`VALIDATION_ERROR\` at path \`["content-type"]\`); JSON nested deeper
than 64 arrays/objects is 422 at path \`["body"]\`; U+0000 in any string of the body or query (value or
member name) is 422 naming the member, never the value. Requests the HTTP parser refuses are 400
\`BAD_REQUEST\`, oversized headers 431 \`REQUEST_HEADER_FIELDS_TOO_LARGE\`, and a client too slow to
send its headers or body 408 \`REQUEST_TIMEOUT\`, in the same envelope, with the connection closed.

Lists take \`limit\` (1..100, default 20) and \`after\` (the opaque \`page.next_cursor\` of the previous
page) and are newest first.`

/** Removes the builder's own 400 (we answer 422) and documents the workspace header. */
const transform = (spec: Record<string, any>) => {
  for (const path of Object.values(spec["paths"] ?? {})) {
    for (const op of Object.values(path as Record<string, any>)) {
      if (op?.responses?.["400"] && JSON.stringify(op.responses["400"]).includes("HttpApiDecodeError")) {
        delete op.responses["400"]
      }
      if (op?.security?.length) {
        op.parameters = [...(op.parameters ?? []), {
          name: "X-Workspace-Id",
          in: "header",
          required: false,
          description:
            "Selects the workspace. Required with a user access token (400 WORKSPACE_CONTEXT_REQUIRED otherwise); optional with an API key, and must then equal the key's workspace (403 otherwise).",
          schema: { type: "string" }
        }]
      }
    }
  }
  delete spec["components"]?.["schemas"]?.["HttpApiDecodeError"]
  delete spec["components"]?.["schemas"]?.["Issue"]
  if (!JSON.stringify(spec["paths"]).includes("PropertyKey")) delete spec["components"]?.["schemas"]?.["PropertyKey"]
  return spec
}

export class Api extends HttpApi.make("switchboard")
  .add(HealthApi)
  .add(AuthApi)
  .add(SessionApi)
  .add(ApiKeysApi)
  .add(PlanApi)
  .add(MessagesApi)
  .add(ChannelsApi)
  .add(QrPairingApi)
  .add(SandboxApi)
  .add(TemplatesApi)
  .add(WebhooksApi)
  .addError(ValidationError)
  .addError(PayloadTooLarge)
  .addError(InternalError)
  .annotate(OpenApi.Title, "Switchboard API")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(OpenApi.Description, DESCRIPTION)
  .annotate(HttpApi.AdditionalSchemas, [NotFound, MethodNotAllowed])
  .annotate(OpenApi.Transform, transform)
{}
