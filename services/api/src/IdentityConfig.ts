/**
 * Secrets and lifetimes of sign-in and API keys. The development defaults let `npm start` run
 * with nothing set; outside production they are warned about once at start, and a production
 * process refuses to start with them (`StartupSafety`).
 */
import { StartupSafety } from "@switchboard/infra"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"

export class IdentityConfig extends Context.Tag("@switchboard/service-api/IdentityConfig")<IdentityConfig, {
  /** HS256 key of access tokens (`JWT_SECRET`) */
  readonly jwtSecret: Redacted.Redacted
  /** Server pepper of the API key hash (`API_KEY_PEPPER`) */
  readonly apiKeyPepper: Redacted.Redacted
  /** Access token lifetime in seconds (15 minutes) */
  readonly accessTokenSeconds: number
  /** Refresh token lifetime in seconds (30 days) */
  readonly refreshTokenSeconds: number
  /** E-mail verification link lifetime in seconds (48 hours) */
  readonly verificationSeconds: number
  /**
   * Public URL of the console/API used in e-mailed links (`PUBLIC_URL`); unset, links use the
   * listening address (`PublicUrl`)
   */
  readonly publicUrl: string | undefined
  /** How long a verified API key is served from memory, in seconds (5; 0 turns the cache off) */
  readonly apiKeyCacheSeconds: number
  /** How many verified API keys one process keeps in memory at most (10 000) */
  readonly apiKeyCacheSize: number
  /** The argon2id cost of a new password hash (`PASSWORD_HASHING`, not read from the environment) */
  readonly passwordHashing: PasswordHashing
}>() {}

/** The cost of an argon2id password hash; a hash records its own, so verifying needs none. */
export interface PasswordHashing {
  /** Memory, in KiB */
  readonly memoryCost: number
  /** Passes over the memory */
  readonly timeCost: number
}

/**
 * OWASP's argon2id recommendation (Password Storage Cheat Sheet): 19 MiB, 2 passes, 1 lane, about
 * 15 ms of CPU a hash here. Every process uses it; only a test's app layer lowers it
 * (`IdentityConfig.layer`), as a test run signs up hundreds of users.
 */
export const PASSWORD_HASHING: PasswordHashing = { memoryCost: 19_456, timeCost: 2 }

export const config = Config.all({
  jwtSecret: Config.redacted("JWT_SECRET").pipe(
    Config.withDefault(Redacted.make(StartupSafety.DEVELOPMENT_JWT_SECRET))
  ),
  apiKeyPepper: Config.redacted("API_KEY_PEPPER").pipe(
    Config.withDefault(Redacted.make(StartupSafety.DEVELOPMENT_API_KEY_PEPPER))
  ),
  accessTokenSeconds: Config.integer("ACCESS_TOKEN_TTL_SECONDS").pipe(Config.withDefault(15 * 60)),
  refreshTokenSeconds: Config.integer("REFRESH_TOKEN_TTL_SECONDS").pipe(Config.withDefault(30 * 24 * 3600)),
  verificationSeconds: Config.integer("EMAIL_VERIFICATION_TTL_SECONDS").pipe(Config.withDefault(48 * 3600)),
  publicUrl: Config.string("PUBLIC_URL").pipe(Config.option, Config.map(Option.getOrUndefined)),
  apiKeyCacheSeconds: Config.number("API_KEY_CACHE_TTL_SECONDS").pipe(
    Config.withDefault(5),
    Config.validate({ message: "Expected a number of seconds, 0 or more", validation: (n) => n >= 0 })
  ),
  apiKeyCacheSize: Config.integer("API_KEY_CACHE_SIZE").pipe(
    Config.withDefault(10_000),
    Config.validate({ message: "Expected a whole number, 1 or more", validation: (n) => n >= 1 })
  ),
  passwordHashing: Config.succeed(PASSWORD_HASHING)
})

export const layerFromEnv = Layer.effect(IdentityConfig, config)

export const layer = (options: Partial<Context.Tag.Service<IdentityConfig>>) =>
  Layer.effect(IdentityConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options })))
