/**
 * Where `GET /metrics` is served (docs/CONFIGURATION.md "Metrics"): its own listener, never the public API's.
 * `METRICS_PORT` unset: no listener at all. `METRICS_HOST` defaults to the loopback address, so a
 * process exposes its metrics beyond the machine only when told to (a private interface).
 */
import { Config, ConfigError, Context, Effect, Either, Layer, Option } from "effect"

export class MetricsConfig extends Context.Tag("@switchboard/infra/MetricsConfig")<MetricsConfig, {
  /** `METRICS_PORT`: the metrics listener's port; `None` turns the listener off (0: any free port, tests) */
  readonly port: Option.Option<number>
  /** `METRICS_HOST`: the metrics listener's address */
  readonly host: string
}>() {}

export const config = Config.all({
  // empty counts as unset (compose's `${METRICS_PORT:-}`)
  port: Config.string("METRICS_PORT").pipe(
    Config.withDefault(""),
    Config.mapOrFail((raw): Either.Either<Option.Option<number>, ConfigError.ConfigError> => {
      const trimmed = raw.trim()
      if (trimmed === "") return Either.right(Option.none())
      const port = Number(trimmed)
      return /^\d+$/.test(trimmed) && port <= 65535
        ? Either.right(Option.some(port))
        : Either.left(ConfigError.InvalidData(["METRICS_PORT"], "Expected a TCP port (0-65535)"))
    }),
    Config.withDescription("Port of the GET /metrics listener (Prometheus); unset: off")
  ),
  host: Config.string("METRICS_HOST").pipe(
    Config.withDefault("127.0.0.1"),
    Config.withDescription("Address of the GET /metrics listener")
  )
})

export const layerFromEnv = Layer.effect(MetricsConfig, config)

/**
 * The settings of a process whose HTTP API listens on `setting` (`HTTP_PORT`, `defaultPort` when
 * unset): a `METRICS_PORT` equal to it is refused as a setting (one `cannot start` line, before any
 * database) saying the two collide, rather than failing to listen as if another process held the
 * port. A value of `setting` that is no port is left to its own setting's check.
 */
export const layerFromEnvApartFrom = (setting: string, defaultPort: number) =>
  Layer.effect(
    MetricsConfig,
    Config.all({
      metrics: config,
      other: Config.string(setting).pipe(Config.withDefault(String(defaultPort)))
    }).pipe(
      Config.mapOrFail(({ metrics, other }) => {
        const otherPort = /^\d+$/.test(other.trim()) ? Number(other.trim()) : undefined
        return Option.isSome(metrics.port) && metrics.port.value !== 0 && metrics.port.value === otherPort
          ? Either.left(
            ConfigError.InvalidData(
              ["METRICS_PORT"],
              `Expected another port than ${setting}'s: METRICS_PORT and ${setting} collide (the metrics listener and the HTTP API cannot share a port)`
            )
          )
          : Either.right(metrics)
      })
    )
  )

export const layer = (options: Partial<Context.Tag.Service<MetricsConfig>>) =>
  Layer.effect(MetricsConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options })))
