/**
 * Provider settings: the shared sandbox number pool and the retry delay scale.
 */
import { Config, Context, Effect, Layer } from "effect"

export const DEFAULT_SANDBOX_NUMBERS = ["+15550100001", "+15550100002", "+15550100003", "+15550100004", "+15550100005"]

export class ProvidersConfig extends Context.Tag("@switchboard/providers/ProvidersConfig")<ProvidersConfig, {
  /** Shared sandbox numbers (`SANDBOX_NUMBERS`, comma-separated E.164) */
  readonly sandboxNumbers: ReadonlyArray<string>
  /** Factor on dispatch retry delays (`RETRY_DELAY_SCALE`, default 1) */
  readonly retryDelayScale: number
  /** Delays of the simulated network's receipts, in ms: sent, delivered, read */
  readonly sandboxReceiptDelaysMs: readonly [number, number, number]
}>() {}

export const config = Config.all({
  sandboxNumbers: Config.string("SANDBOX_NUMBERS").pipe(
    Config.map((raw) => raw.split(",").map((s) => s.trim()).filter((s) => s !== "")),
    Config.validate({
      message: "SANDBOX_NUMBERS must be comma-separated E.164 numbers",
      validation: (numbers) => numbers.length > 0 && numbers.every((n) => /^\+[1-9]\d{6,14}$/.test(n))
    }),
    Config.withDefault(DEFAULT_SANDBOX_NUMBERS)
  ),
  retryDelayScale: Config.number("RETRY_DELAY_SCALE").pipe(
    Config.validate({ message: "RETRY_DELAY_SCALE must be > 0", validation: (n) => n > 0 }),
    Config.withDefault(1)
  ),
  sandboxReceiptDelaysMs: Config.succeed([250, 700, 1500] as const)
})

export const layerFromEnv = Layer.effect(ProvidersConfig, config)

export const layer = (options: Partial<Context.Tag.Service<ProvidersConfig>>) =>
  Layer.effect(ProvidersConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options })))
