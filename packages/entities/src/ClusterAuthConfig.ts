/**
 * The credential api nodes and runners prove to each other on every cluster connection
 * (`ClusterHandshake`), read from the environment:
 *
 * - `CLUSTER_SECRET`: comma-separated secrets. The FIRST proves this node; a peer's proof made with
 *   ANY of them is accepted. A rotation lists the new secret next to the old one (docs/CONFIGURATION.md
 *   "Rotating the cluster secret"). Unset: the development secret, warned about at start and
 *   refused in production (`StartupSafety`), so the port is authenticated in every mode.
 * - `CLUSTER_HANDSHAKE_TIMEOUT` (default 5 seconds): a connection that has not completed the
 *   handshake by then is closed, on either side.
 */
import { StartupSafety } from "@switchboard/infra"
import { Array, Config, Context, Duration, Effect, Layer, Redacted } from "effect"

export class ClusterAuthConfig extends Context.Tag("@switchboard/entities/ClusterAuthConfig")<ClusterAuthConfig, {
  /** the first signs this node's proofs; every one is accepted from a peer */
  readonly secrets: Array.NonEmptyReadonlyArray<Redacted.Redacted<Buffer>>
  /** how long a connection may take to prove itself before it is closed */
  readonly handshakeTimeout: Duration.Duration
}>() {}

export const developmentSecret: Redacted.Redacted<Buffer> = Redacted.make(
  Buffer.from(StartupSafety.DEVELOPMENT_CLUSTER_SECRET, "utf8")
)

export const defaults: Context.Tag.Service<ClusterAuthConfig> = {
  secrets: [developmentSecret],
  handshakeTimeout: Duration.seconds(5)
}

/** `CLUSTER_SECRET` split on commas, each part trimmed; its bytes are the HMAC key. */
const secrets: Config.Config<Array.NonEmptyReadonlyArray<Redacted.Redacted<Buffer>>> = Config.redacted(
  "CLUSTER_SECRET"
).pipe(
  Config.withDefault(Redacted.make(StartupSafety.DEVELOPMENT_CLUSTER_SECRET)),
  Config.map((value) =>
    Redacted.value(value).split(",").map((part) => part.trim()).filter((part) => part !== "").map((part) =>
      Redacted.make(Buffer.from(part, "utf8"))
    )
  ),
  Config.validate({ message: "CLUSTER_SECRET must hold at least one secret", validation: Array.isNonEmptyArray }),
  Config.withDescription(
    "Secrets of the cluster port, comma-separated: the first proves this node, any one is accepted from a peer"
  )
)

export const config: Config.Config<Context.Tag.Service<ClusterAuthConfig>> = Config.all({
  secrets,
  handshakeTimeout: Config.duration("CLUSTER_HANDSHAKE_TIMEOUT").pipe(
    Config.withDefault(defaults.handshakeTimeout),
    Config.withDescription("Time a cluster connection has to prove itself before it is closed")
  )
})

/** The development secret is warned about once at start (`StartupSafety`), not here. */
export const layerFromEnv: Layer.Layer<ClusterAuthConfig> = Layer.effect(ClusterAuthConfig, config).pipe(Layer.orDie)

/** The environment's settings with `options` on top (tests: a secret of their own, short timeouts). */
export const layer = (options: Partial<Context.Tag.Service<ClusterAuthConfig>>): Layer.Layer<ClusterAuthConfig> =>
  Layer.effect(ClusterAuthConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options }))).pipe(Layer.orDie)

/** Secrets from their text, as `CLUSTER_SECRET` holds them (tests). */
export const secretsOf = (
  first: string,
  ...rest: ReadonlyArray<string>
): Array.NonEmptyReadonlyArray<Redacted.Redacted<Buffer>> =>
  Array.map([first, ...rest] as const, (text) => Redacted.make(Buffer.from(text, "utf8")))
