/**
 * The Switchboard HTTP contract. One group per resource; the server implements it, the SDK's
 * typed client and the OpenAPI document are derived from it.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { Errors } from "@switchboard/domain"
import { Option, Schema } from "effect"
import { RESPONSES } from "./ApiExampleResponses.js"
import { REQUESTS } from "./ApiExamples.js"
import { ApiKeysApi } from "./ApiKeysApi.js"
import { AuthApi } from "./AuthApi.js"
import { ChannelsApi } from "./ChannelsApi.js"
import { ContactGroupsApi } from "./ContactGroupsApi.js"
import { ContactImportsApi } from "./ContactImportsApi.js"
import { ContactsApi } from "./ContactsApi.js"
import { ConversationsApi } from "./ConversationsApi.js"
import { GroupChatsApi } from "./GroupChatsApi.js"
import { HealthApi } from "./HealthApi.js"
import { MediaApi } from "./MediaApi.js"
import { MessagingApi } from "./MessagingApi.js"
import { DESCRIPTIONS, SUMMARIES, TAGS } from "./OperationDocs.js"
import { PlanApi } from "./PlanApi.js"
import { QrPairingApi } from "./QrPairingApi.js"
import { SandboxApi } from "./SandboxApi.js"
import { accessExtensions } from "./Security.js"
import { SessionApi } from "./SessionApi.js"
import { TemplatesApi } from "./TemplatesApi.js"
import { WebhooksApi } from "./WebhooksApi.js"

const DESCRIPTION = `Provider-independent messaging API.

Conventions: JSON members are snake_case; ids are a prefix plus a ULID; timestamps are ISO 8601 UTC
with milliseconds. Every character limit (a schema's \`maxLength\`/\`minLength\`, "at most N characters")
counts Unicode code points: an emoji is one character. Every error is \`{"error":{"code","message","details"}}\` with \`details\` always an
object; validation failures are 422 \`VALIDATION_ERROR\` with \`details.issues[].path\` and
\`.message\` (submitted values are never echoed back, nor member names the client chose: an unknown member or a
key of \`metadata\`, \`attributes\` or \`variables\` is reported at the object that holds it; errors repeat only
member names the contract declares, variable names a stored template declares, and well-formed ids). Unknown routes are 404 \`NOT_FOUND\` with
\`details.resource = "route"\`. An id that names nothing is 404 with the resource's not-found code
(\`NOT_FOUND\` with \`details.resource\`, \`CHANNEL_NOT_FOUND\`, ...) whether it is well formed or not
(\`msg_123\`, \`channel_id: "ch_unknown"\`), in the path or as a reference in the body or a filter;
a value that is not a string where an id goes is 422. A path is routed exactly as sent: a raw \`;\` or \`#\`, or any other character a
path segment may not hold unencoded (RFC 3986; a \`%\` not followed by two hex digits included), is 404
\`NOT_FOUND\` with \`details.reason = "path_character"\` on every route, before anything runs; an
encoded \`%3B\` stays part of its segment. A known path with another method is 405 \`METHOD_NOT_ALLOWED\` with an
\`Allow\` header. Bodies over 1 MiB (announced or chunked) are 413 \`PAYLOAD_TOO_LARGE\` with \`Connection: close\`; the server
reads and discards the rest of the body (up to 10 s and 16 MiB) before it closes, so a client still writing
reads the answer. Every response carries
\`X-Request-Id\` (a valid incoming one, 1..128 of \`[A-Za-z0-9._-]\`, is echoed).

Hostile input, the same on every route: a body with a \`Content-Encoding\` (gzip, br, ...) is 415
\`UNSUPPORTED_MEDIA_TYPE\` (\`details.reason = content_encoding\`, \`Connection: close\`): send it uncompressed. A request body must be \`application/json\` (form-encoded,
text or multipart bodies, or a body without \`Content-Type\`, are 422 \`VALIDATION_ERROR\` at path \`["content-type"]\`); JSON nested deeper
than 64 arrays/objects is 422 at path \`["body"]\`; U+0000 in any string of the body or query (value or
member name) is 422 naming the member, never the value; a query parameter the operation does not declare is
422 at its position in the query (\`["query", 0]\`: the first parameter), never naming it, and a declared one given
twice 422 at its name; a body that is not valid UTF-8 is 422 at path
\`["body"]\`, and a member given twice in one object or a lone surrogate escape (\`"\\ud800"\` without its
pair) is 422 at its path. Requests the HTTP parser refuses, an HTTP/1.1 request without \`Host\` and
\`CONNECT\` are 400 \`BAD_REQUEST\`, an \`Expect\` other than \`100-continue\` 417 \`EXPECTATION_FAILED\`, oversized headers 431 \`REQUEST_HEADER_FIELDS_TOO_LARGE\`, and a client too slow to
send its headers or body 408 \`REQUEST_TIMEOUT\`, in the same envelope, with the connection closed.

Lists take \`limit\` (1..100, default 20) and \`after\` (the opaque \`page.next_cursor\` of the previous
page) and are newest first, except lists of things without a creation time, in a stable order they
state (\`/v1/contact-tags\` by tag, \`/v1/webhook-event-types\` in catalogue order). Every list answers
\`{data, page: {next_cursor, has_more}}\`.`

type Json = Record<string, unknown>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const objectAt = (o: Json | undefined, key: string): Json | undefined => {
  const value = o?.[key]
  return isObject(value) ? value : undefined
}

/** Every operation's access extensions (`x-required-scopes`, ...), by `get /v1/things/{id}`. */
const extensionsByOperation = () => {
  const out = new Map<string, Record<string, unknown>>()
  HttpApi.reflect(Api, {
    onGroup() {},
    onEndpoint({ endpoint, mergedAnnotations }) {
      const path = endpoint.path.replace(/:(\w+)\??/g, "{$1}")
      out.set(`${endpoint.method.toLowerCase()} ${path}`, accessExtensions(mergedAnnotations))
    }
  })
  return out
}

/**
 * The operations whose body may be left out (`qr/start`, a webhook endpoint's `test`): their
 * payload takes `null`, which is how the server reads an empty body. The builder marks every
 * request body required; these are not.
 */
const optionalBodies = () => {
  const out = new Set<string>()
  HttpApi.reflect(Api, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      const payload = Option.getOrUndefined(endpoint.payloadSchema)
      if (payload === undefined || !Schema.is(Schema.typeSchema(payload))(null)) return
      out.add(`${endpoint.method.toLowerCase()} ${endpoint.path.replace(/:(\w+)\??/g, "{$1}")}`)
    }
  })
  return out
}

const requestExamples = new Map(REQUESTS)

/**
 * The operation's request and response examples (ApiExamples.ts), in OpenAPI's own fields: each
 * path and query parameter's `example`, the JSON request body's and the documented response's
 * `example` (or, for a body that is not JSON, its media type's: an event stream's text).
 */
const addExamples = (op: Json, id: string) => {
  const request = requestExamples.get(id)
  if (request !== undefined) {
    const parameters: ReadonlyArray<unknown> = Array.isArray(op["parameters"]) ? op["parameters"] : []
    for (const parameter of parameters) {
      if (!isObject(parameter)) continue
      const values = parameter["in"] === "path" ? request.path : parameter["in"] === "query" ? request.query : undefined
      const value = values?.[String(parameter["name"])]
      if (value !== undefined) parameter["example"] = value
    }
    const json = objectAt(objectAt(objectAt(op, "requestBody"), "content"), "application/json")
    if (json !== undefined && request.body !== undefined) json["example"] = request.body
  }
  const response = RESPONSES[id]
  const content = objectAt(objectAt(objectAt(op, "responses"), String(response?.status ?? "")), "content")
  if (response?.body !== undefined) {
    const json = objectAt(content, "application/json")
    if (json !== undefined) json["example"] = response.body
  }
  if (response?.text !== undefined) {
    // a body that is not JSON (an event stream): its one media type's example
    const [other] = Object.entries(content ?? {}).filter(([type, media]) =>
      type !== "application/json" && isObject(media)
    )
    if (other !== undefined && isObject(other[1])) other[1]["example"] = response.text
  }
}

/**
 * Removes the builder's own 400 (we answer 422), documents the workspace header, marks the bodies
 * the server does not need as optional, and adds each operation's access extensions from the
 * annotations the server enforces.
 */
const transform = (spec: Json): Json => {
  const extensions = extensionsByOperation()
  const optional = optionalBodies()
  for (const [pathName, path] of Object.entries(objectAt(spec, "paths") ?? {})) {
    if (!isObject(path)) continue
    for (const [method, op] of Object.entries(path)) {
      if (!isObject(op)) continue
      Object.assign(op, extensions.get(`${method} ${pathName}`))
      const body = objectAt(op, "requestBody")
      if (body !== undefined && optional.has(`${method} ${pathName}`)) {
        body["required"] = false
        body["description"] = "Optional: no body (or `null`) is the same as `{}`"
      }
      const id = String(op["operationId"])
      if (SUMMARIES[id] !== undefined) op["summary"] = SUMMARIES[id]
      if (op["description"] === undefined && DESCRIPTIONS[id] !== undefined) op["description"] = DESCRIPTIONS[id]
      const responses = objectAt(op, "responses")
      addExamples(op, id)
      if (responses?.["400"] && JSON.stringify(responses["400"]).includes("HttpApiDecodeError")) {
        delete responses["400"]
      }
      const security = op["security"]
      if (Array.isArray(security) && security.length > 0) {
        const parameters: ReadonlyArray<unknown> = Array.isArray(op["parameters"]) ? op["parameters"] : []
        op["parameters"] = [...parameters, {
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
  const tags = spec["tags"]
  if (Array.isArray(tags)) {
    for (const tag of tags) {
      if (isObject(tag) && TAGS[String(tag["name"])]) tag["description"] = TAGS[String(tag["name"])]
    }
  }
  // relative to where the document is served (a BASE_PATH sets its own)
  if (!Array.isArray(spec["servers"]) || spec["servers"].length === 0) spec["servers"] = [{ url: "/" }]
  const schemas = objectAt(objectAt(spec, "components"), "schemas")
  if (schemas !== undefined) {
    delete schemas["HttpApiDecodeError"]
    delete schemas["Issue"]
    if (!JSON.stringify(spec["paths"]).includes("PropertyKey")) delete schemas["PropertyKey"]
  }
  return spec
}

export class Api extends HttpApi.make("switchboard")
  .add(HealthApi)
  .add(AuthApi)
  .add(SessionApi)
  .add(ApiKeysApi)
  .add(PlanApi)
  .add(MessagingApi)
  .add(MediaApi)
  .add(ConversationsApi)
  .add(ChannelsApi)
  .add(QrPairingApi)
  .add(SandboxApi)
  .add(ContactImportsApi)
  .add(ContactsApi)
  .add(ContactGroupsApi)
  .add(GroupChatsApi)
  .add(TemplatesApi)
  .add(WebhooksApi)
  .addError(Errors.ValidationError)
  .addError(Errors.PayloadTooLarge)
  .addError(Errors.InternalError)
  .annotate(OpenApi.Title, "Switchboard API")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(OpenApi.Description, DESCRIPTION)
  .annotate(HttpApi.AdditionalSchemas, [Errors.NotFound, Errors.MethodNotAllowed])
  .annotate(OpenApi.Transform, transform)
{}
