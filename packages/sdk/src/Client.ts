/**
 * The typed client: derived from the same `HttpApi` contract the server implements
 * (`@switchboard/api`), so every route, body, response and error is typed as the OpenAPI document
 * describes it. `make` needs an `HttpClient` (`FetchHttpClient.layer` in Node 20+ and browsers).
 */
import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
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

/**
 * `client.<group>.<endpoint>(request)`, e.g.
 * `client.messages.send({ payload: { to, text: { body } }, headers: {} })`: an `Effect` that
 * succeeds with the decoded response and fails with the endpoint's typed errors (each an
 * `ApiError` with `_tag`, `message`, `details`), an `HttpClientError` or a `ParseError`.
 */
export const make = (options: ClientOptions = {}) =>
  HttpApiClient.make(Api.Api, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest(authenticate(options))
  })

export type Client = Effect.Effect.Success<ReturnType<typeof make>>
