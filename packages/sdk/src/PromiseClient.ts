/**
 * The client for callers who do not use Effect: the same methods as the typed client, returning
 * Promises that resolve with the decoded response or reject with a `SwitchboardError`.
 */
import { FetchHttpClient, type HttpApiEndpoint, type HttpApiGroup, HttpClient } from "@effect/platform"
import { Api, Issues } from "@switchboard/api"
import { Cause, Effect, Exit, Layer, Option, ParseResult, Predicate } from "effect"
import type { Client, ClientOptions } from "./Client.js"
import { make } from "./Client.js"

/**
 * A failed call. `code` is the API's error code (`VALIDATION_ERROR`, `CHANNEL_NOT_FOUND`, ...:
 * the OpenAPI document lists them), or one of the client's own: `NETWORK_ERROR` (no answer),
 * `UNEXPECTED_RESPONSE` (an answer the contract does not describe) and `INVALID_RESPONSE`. A
 * request that does not match the contract is not sent and fails as the server would refuse it:
 * status 422, `VALIDATION_ERROR`, `details.issues` (member path and a sentence, never the value),
 * plus `details.sent = false`.
 */
export class SwitchboardError extends Error {
  override readonly name = "SwitchboardError"
  constructor(
    readonly code: string,
    message: string,
    /** the HTTP status, when the API answered */
    readonly status: number | undefined,
    readonly details: Readonly<Record<string, unknown>>
  ) {
    super(message)
  }
}

const statics = (error: object): { code?: unknown; status?: unknown } =>
  (error as { constructor?: { code?: unknown; status?: unknown } }).constructor ?? {}

/** The request did not encode: refused before sending, in the server's words (one line). */
const validationError = (error: ParseResult.ParseError): SwitchboardError => {
  const issues = Issues.fromParseError(error)
  const first = issues[0]!
  const where = first.path.length > 0 ? `${first.path.join(".")}: ` : ""
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : ""
  return new SwitchboardError(
    "VALIDATION_ERROR",
    `Request validation failed: ${where}${first.message}${more}`,
    422,
    { issues, sent: false }
  )
}

type Part = "path" | "urlParams" | "payload" | "headers"

/** Each endpoint of the contract: its group, its name and the request members it takes (`messages.send` -> payload, headers). */
const ENDPOINTS: ReadonlyArray<{ readonly group: string; readonly name: string; readonly parts: ReadonlyArray<Part> }> =
  (Object.values(Api.Api.groups) as unknown as ReadonlyArray<HttpApiGroup.HttpApiGroup.AnyWithProps>).flatMap((group) =>
    (Object.values(group.endpoints) as ReadonlyArray<HttpApiEndpoint.HttpApiEndpoint.AnyWithProps>).map((endpoint) => {
      const parts: Array<Part> = []
      if (Option.isSome(endpoint.pathSchema)) parts.push("path")
      if (Option.isSome(endpoint.urlParamsSchema)) parts.push("urlParams")
      if (Option.isSome(endpoint.payloadSchema)) parts.push("payload")
      if (Option.isSome(endpoint.headersSchema)) parts.push("headers")
      return { group: group.identifier, name: endpoint.name, parts }
    })
  )
const PARTS: ReadonlyMap<string, ReadonlyArray<Part>> = new Map(
  ENDPOINTS.map(({ group, name, parts }) => [`${group}.${name}`, parts])
)

/**
 * A request without a member its endpoint takes (`headers` left out of `messages.send`), named:
 * the schema library would only say "Expected an object" of the part it could not encode.
 */
const missingMember = (name: string, request: unknown): SwitchboardError | undefined => {
  const parts = PARTS.get(name) ?? []
  const takes = parts.length === 0 ? "no request members" : `{ ${parts.join(", ")} }`
  // a payload is the contract's to judge once given (`qr/start` takes `null`: no body)
  const given = (part: Part) =>
    Predicate.isRecord(request) &&
    (part === "payload" ? request[part] !== undefined : Predicate.isRecord(request[part]))
  const missing = parts.filter((part) => !given(part))
  if (missing.length === 0) return undefined
  return new SwitchboardError(
    "VALIDATION_ERROR",
    `Request validation failed: ${
      missing[0]
    }: Required member is missing or not an object (switchboard.${name} takes ${takes}${
      missing[0] === "headers" ? "; pass headers: {} when you set none" : ""
    })`,
    422,
    { issues: missing.map((part) => ({ path: [part], message: "Required member is missing" })), sent: false }
  )
}

/** Any failure of the typed client as a `SwitchboardError`. */
export const toSwitchboardError = (error: unknown): SwitchboardError => {
  if (error instanceof SwitchboardError) return error
  if (Predicate.isObject(error)) {
    const { code, status } = statics(error)
    if (typeof code === "string" && typeof status === "number") {
      const e = error as { message?: unknown; details?: unknown }
      return new SwitchboardError(
        code,
        String(e.message ?? ""),
        status,
        Predicate.isRecord(e.details) ? e.details : {}
      )
    }
    if (ParseResult.isParseError(error)) return validationError(error)
    if (Predicate.isTagged(error, "ResponseError")) {
      const response = (error as unknown as { response: { status: number } }).response
      const reason = (error as { reason?: unknown }).reason
      return new SwitchboardError(
        reason === "Decode" ? "INVALID_RESPONSE" : "UNEXPECTED_RESPONSE",
        `Unexpected answer: HTTP ${response.status}`,
        response.status,
        {}
      )
    }
    if (Predicate.isTagged(error, "RequestError")) {
      return new SwitchboardError("NETWORK_ERROR", String((error as { message?: unknown }).message), undefined, {})
    }
  }
  return new SwitchboardError("NETWORK_ERROR", String(error), undefined, {})
}

/** One endpoint: the same request (without `withResponse`), the decoded response. */
type Promisified<F> = F extends (request: infer A) => Effect.Effect<infer S, infer _E, infer _R> ?
  (request: A extends { readonly withResponse?: unknown } ? Omit<A, "withResponse"> : A) => Promise<
    Exclude<S, readonly [unknown, unknown]>
  >
  : never

/** The typed client's groups and endpoints, each returning a Promise. */
export type PromiseClient = {
  readonly [Group in keyof Client]: {
    readonly [Endpoint in keyof Client[Group]]: Promisified<Client[Group][Endpoint]>
  }
}

const withoutResponse = (request: unknown) => {
  if (!Predicate.isRecord(request) || !("withResponse" in request)) return request
  const { withResponse: _, ...rest } = request
  return rest
}

export interface CreateClientOptions extends ClientOptions {
  /** the `fetch` to use (default: the global one) */
  readonly fetch?: typeof globalThis.fetch | undefined
}

/**
 * ```ts
 * const switchboard = createClient({ baseUrl: "https://api.example.com", apiKey: "wa_test_..." })
 * const message = await switchboard.messages.send({ payload: { to: "+4915112345678", text: { body: "Hi" } }, headers: {} })
 * ```
 */
export const createClient = (options: CreateClientOptions): PromiseClient => {
  const httpClient = options.fetch === undefined
    ? FetchHttpClient.layer
    : FetchHttpClient.layer.pipe(Layer.provide(Layer.succeed(FetchHttpClient.Fetch, options.fetch)))
  const client = Effect.runSync(make(options).pipe(Effect.provide(httpClient))) as unknown as Record<
    string,
    Record<string, (request: unknown) => Effect.Effect<unknown, unknown, HttpClient.HttpClient>>
  >
  const wrapped: Record<string, Record<string, (request: unknown) => Promise<unknown>>> = {}
  for (const { group, name } of ENDPOINTS) {
    wrapped[group] ??= {}
    wrapped[group][name] = (request) => {
      const missing = missingMember(`${group}.${name}`, request)
      if (missing !== undefined) return Promise.reject(missing)
      // the group's methods are made at its first call (`make`)
      const endpoint = client[group]![name]!
      return Effect.runPromiseExit(endpoint(withoutResponse(request)) as Effect.Effect<unknown, unknown>).then(
        (exit) => {
          if (Exit.isSuccess(exit)) return exit.value
          throw toSwitchboardError(Cause.squash(exit.cause))
        }
      )
    }
  }
  return wrapped as unknown as PromiseClient
}
