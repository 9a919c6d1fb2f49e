/**
 * The typed client: derived from the same `HttpApi` contract the server implements
 * (`@switchboard/api`), so every route, body, response and error is typed as the OpenAPI document
 * describes it. `make` needs an `HttpClient` (`FetchHttpClient.layer` in Node 20+ and browsers).
 */
import { type HttpApi, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Api } from "@switchboard/api"
import { Effect } from "effect"

export interface ClientOptions {
  /** where the API is served, e.g. `https://api.example.com` (with its base path, if any) */
  readonly baseUrl?: string | URL | undefined
  /** an API key (`wa_test_...`, `wa_live_...`) or a user access token, sent as `Authorization: Bearer` */
  readonly apiKey?: string | undefined
  /** sent as `X-Workspace-Id`: needed with a user access token, optional with an API key */
  readonly workspaceId?: string | undefined
}

const authenticate = (options: ClientOptions) => (request: HttpClientRequest.HttpClientRequest) => {
  let authenticated = request
  if (options.apiKey !== undefined) authenticated = HttpClientRequest.bearerToken(authenticated, options.apiKey)
  if (options.workspaceId !== undefined) {
    authenticated = HttpClientRequest.setHeader(authenticated, "x-workspace-id", options.workspaceId)
  }
  return authenticated
}

/** The contract's groups (`messages`, `channels`, ...), by name. */
export const groupNames: ReadonlyArray<string> = Object.keys(Api.Api.groups)

type Groups = typeof Api.Api extends HttpApi.HttpApi<infer _Id, infer G, infer _E, infer _R> ? G : never
type ApiError = typeof Api.Api extends HttpApi.HttpApi<infer _Id, infer _G, infer E, infer _R> ? E : never

/**
 * `client.<group>.<endpoint>(request)`, e.g.
 * `client.messages.send({ payload: { to, text: { body } }, headers: {} })`: an `Effect` that
 * succeeds with the decoded response and fails with the endpoint's typed errors (each an
 * `ApiError` with `_tag`, `message`, `details`), an `HttpClientError` or a `ParseError`.
 */
export type Client = HttpApiClient.Client<Groups, ApiError, never>

/**
 * The typed client (`Client`). Each group's methods are made the first time the group is used
 * (`client.messages`), not all at once: making one walks the group's endpoints and their schemas,
 * and a caller uses a few of the contract's groups (the console's first screen two). Making every
 * group took about 25 ms of the browser's main thread, three times as the console loaded, and 21-32 ms in Node
 * (bench/RESULTS.md 18).
 */
export const make = (options: ClientOptions = {}): Effect.Effect<Client, never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (http) => {
    const httpClient = HttpClient.mapRequest(http, authenticate(options))
    const client: Record<string, unknown> = {}
    for (const group of groupNames) {
      let made: unknown
      Object.defineProperty(client, group, {
        enumerable: true,
        get: () =>
          made ??= Effect.runSync(
            HttpApiClient.group(Api.Api, { group: group as never, httpClient, baseUrl: options.baseUrl })
          )
      })
    }
    return client as Client
  })
