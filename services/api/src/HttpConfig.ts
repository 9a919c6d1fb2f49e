/** How the HTTP listener is set up (docs/CONFIGURATION.md "Configuration"). */
import { Config, Context, Duration, Effect, Layer } from "effect"

export class HttpConfig extends Context.Tag("@switchboard/service-api/HttpConfig")<HttpConfig, {
  /** Listening port (`HTTP_PORT`; the cluster owns `PORT`) */
  readonly port: number
  /** Listening address */
  readonly host: string
  /** Global path prefix, e.g. `/api`; empty for none */
  readonly basePath: string
  /** Largest request body accepted, in bytes */
  readonly maxBodyBytes: number
  /** One JSON access-log line per request */
  readonly logRequests: boolean
  /** Time for a client to send the request headers (Node `headersTimeout`); then 408 */
  readonly headersTimeout: Duration.Duration
  /** Time for a client to send the whole request, body included (Node `requestTimeout`); then 408 */
  readonly requestTimeout: Duration.Duration
  /** How long an idle keep-alive connection stays open between requests (Node `keepAliveTimeout`) */
  readonly keepAliveTimeout: Duration.Duration
}>() {}

const normaliseBasePath = (raw: string) => {
  const trimmed = raw.trim().replace(/\/+$/, "")
  if (trimmed === "") return ""
  return trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

/** `MAX_BODY_BYTES` unless set: the largest request body (docs/LIMITS.md). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** `HTTP_PORT` unless set. */
export const DEFAULT_PORT = 3000

export const config = Config.all({
  port: Config.port("HTTP_PORT").pipe(Config.withDefault(DEFAULT_PORT)),
  host: Config.string("HTTP_HOST").pipe(Config.withDefault("0.0.0.0")),
  basePath: Config.string("BASE_PATH").pipe(Config.withDefault(""), Config.map(normaliseBasePath)),
  maxBodyBytes: Config.integer("MAX_BODY_BYTES").pipe(Config.withDefault(DEFAULT_MAX_BODY_BYTES)),
  logRequests: Config.boolean("LOG_REQUESTS").pipe(Config.withDefault(true)),
  headersTimeout: Config.duration("HTTP_HEADERS_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10))),
  requestTimeout: Config.duration("HTTP_REQUEST_TIMEOUT").pipe(Config.withDefault(Duration.seconds(30))),
  keepAliveTimeout: Config.duration("HTTP_KEEP_ALIVE_TIMEOUT").pipe(Config.withDefault(Duration.seconds(5)))
})

export const layerFromEnv = Layer.effect(HttpConfig, config)

export const layer = (options: Partial<Context.Tag.Service<HttpConfig>>) =>
  Layer.effect(HttpConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options })))
