/** Webhook delivery settings (DECISIONS 10, 12). */
import { Config, Context, Effect, Layer, Redacted } from "effect"
import { type Resolver, systemResolver } from "./UrlPolicy.js"

const DEV_KEY = Buffer.alloc(32, 7).toString("base64")

export class WebhooksConfig extends Context.Tag("@switchboard/webhooks/WebhooksConfig")<WebhooksConfig, {
  /** `WEBHOOK_ALLOW_PRIVATE_TARGETS`: lifts the address AND port rules (development only) */
  readonly allowPrivateTargets: boolean
  /** `RETRY_DELAY_SCALE`: factor on the retry schedule */
  readonly retryDelayScale: number
  /** Deliveries in flight per endpoint */
  readonly maxInFlight: number
  /** `SECRETS_ENCRYPTION_KEY`: base64 of 32 bytes; AES-256-GCM key of endpoint secrets at rest */
  readonly encryptionKey: Redacted.Redacted<Buffer>
  /** How host names are resolved (the system resolver; tests inject one to simulate DNS rebinding) */
  readonly resolver: Resolver
}>() {}

export const config = Config.all({
  allowPrivateTargets: Config.boolean("WEBHOOK_ALLOW_PRIVATE_TARGETS").pipe(Config.withDefault(false)),
  retryDelayScale: Config.number("RETRY_DELAY_SCALE").pipe(Config.withDefault(1)),
  maxInFlight: Config.integer("WEBHOOK_MAX_IN_FLIGHT").pipe(Config.withDefault(4)),
  encryptionKey: Config.redacted("SECRETS_ENCRYPTION_KEY").pipe(
    Config.withDefault(Redacted.make(DEV_KEY)),
    Config.map((r) => Redacted.make(Buffer.from(Redacted.value(r), "base64"))),
    Config.validate({
      message: "SECRETS_ENCRYPTION_KEY must be base64 of 32 bytes",
      validation: (k) => Redacted.value(k).length === 32
    })
  ),
  resolver: Config.succeed<Resolver>(systemResolver)
})

const warn = (c: Context.Tag.Service<WebhooksConfig>) =>
  Effect.gen(function*() {
    if (c.allowPrivateTargets) {
      yield* Effect.logWarning(
        "WEBHOOK_ALLOW_PRIVATE_TARGETS=true: webhooks may reach private addresses and any port (development only!)"
      )
    }
    if (Redacted.value(c.encryptionKey).toString("base64") === DEV_KEY) {
      yield* Effect.logWarning(
        "SECRETS_ENCRYPTION_KEY is not set: webhook secrets use the development key (never in production)"
      )
    }
  })

export const layerFromEnv = Layer.effect(WebhooksConfig, Effect.tap(config, warn))

export const layer = (options: Partial<Context.Tag.Service<WebhooksConfig>>) =>
  Layer.effect(WebhooksConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options })))
