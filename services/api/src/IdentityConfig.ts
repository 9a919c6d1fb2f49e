/**
 * Secrets and lifetimes of sign-in and API keys. The development defaults let `npm start` run
 * with nothing set; they are logged as a warning at start and must be replaced in production.
 */
import { Config, Context, Effect, Layer, Redacted } from "effect"

const DEV_JWT_SECRET = "switchboard-development-jwt-secret-change-me"
const DEV_PEPPER = "switchboard-development-api-key-pepper-change-me"

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
  /** Public URL of the console/API used in e-mailed links (`PUBLIC_URL`) */
  readonly publicUrl: string
}>() {}

export const config = Config.all({
  jwtSecret: Config.redacted("JWT_SECRET").pipe(Config.withDefault(Redacted.make(DEV_JWT_SECRET))),
  apiKeyPepper: Config.redacted("API_KEY_PEPPER").pipe(Config.withDefault(Redacted.make(DEV_PEPPER))),
  accessTokenSeconds: Config.integer("ACCESS_TOKEN_TTL_SECONDS").pipe(Config.withDefault(15 * 60)),
  refreshTokenSeconds: Config.integer("REFRESH_TOKEN_TTL_SECONDS").pipe(Config.withDefault(30 * 24 * 3600)),
  verificationSeconds: Config.integer("EMAIL_VERIFICATION_TTL_SECONDS").pipe(Config.withDefault(48 * 3600)),
  publicUrl: Config.string("PUBLIC_URL").pipe(Config.withDefault("http://localhost:3000"))
})

const warnOnDefaults = (c: Context.Tag.Service<IdentityConfig>) =>
  Effect.gen(function*() {
    if (Redacted.value(c.jwtSecret) === DEV_JWT_SECRET) {
      yield* Effect.logWarning("JWT_SECRET is not set: using the development default (never in production)")
    }
    if (Redacted.value(c.apiKeyPepper) === DEV_PEPPER) {
      yield* Effect.logWarning("API_KEY_PEPPER is not set: using the development default (never in production)")
    }
  })

export const layerFromEnv = Layer.effect(IdentityConfig, Effect.tap(config, warnOnDefaults))

export const layer = (options: Partial<Context.Tag.Service<IdentityConfig>>) =>
  Layer.effect(IdentityConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options })))
