/** Webhook delivery settings. */
import { SecretsConfig } from "@switchboard/infra"
import { Config, Context, Effect, Layer } from "effect"
import { type Resolver, systemResolver } from "./UrlPolicy.js"

export class WebhooksConfig extends Context.Tag("@switchboard/webhooks/WebhooksConfig")<WebhooksConfig, {
  /** `WEBHOOK_ALLOW_PRIVATE_TARGETS`: lifts the address AND port rules (development only) */
  readonly allowPrivateTargets: boolean
  /** `RETRY_DELAY_SCALE`: factor on the retry schedule */
  readonly retryDelayScale: number
  /** Deliveries in flight per endpoint */
  readonly maxInFlight: number
  /**
   * `SECRETS_ENCRYPTION_KEY` (+ `SECRETS_ENCRYPTION_KEY_PREVIOUS`): seals endpoint secrets at rest
   * with AES-256-GCM and opens them (`SecretsConfig`)
   */
  readonly keyring: SecretsConfig.Keyring
  /** How host names are resolved (the system resolver; tests inject one to simulate DNS rebinding) */
  readonly resolver: Resolver
}>() {}

export const config = Config.all({
  allowPrivateTargets: Config.boolean("WEBHOOK_ALLOW_PRIVATE_TARGETS").pipe(Config.withDefault(false)),
  retryDelayScale: Config.number("RETRY_DELAY_SCALE").pipe(Config.withDefault(1)),
  maxInFlight: Config.integer("WEBHOOK_MAX_IN_FLIGHT").pipe(Config.withDefault(4)),
  keyring: SecretsConfig.keyring,
  resolver: Config.succeed<Resolver>(systemResolver)
})

/** Unsafe values (private targets, the development key) are warned about once at start (`StartupSafety`). */
export const layerFromEnv = Layer.effect(WebhooksConfig, config)

export const layer = (options: Partial<Context.Tag.Service<WebhooksConfig>>) =>
  Layer.effect(WebhooksConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options })))
