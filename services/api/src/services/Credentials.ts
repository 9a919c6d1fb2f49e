/**
 * The cryptography of sign-in: argon2id passwords, HS256 access tokens (jose), random tokens
 * stored as hashes, and API key secrets with their keyed hash.
 */
import { hash as argon2Hash, verify as argon2Verify } from "@node-rs/argon2"
import { Ids } from "@switchboard/domain"
import { Effect, Redacted, Schema } from "effect"
import { jwtVerify, SignJWT } from "jose"
import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from "node:crypto"
import { IdentityConfig } from "../IdentityConfig.js"

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** A string of `length` base62 characters from a CSPRNG, without modulo bias. */
export const randomBase62 = (length: number) => {
  let out = ""
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)]
  return out
}

/** An opaque token for refresh and e-mail verification (256 bits). */
export const randomToken = () => randomBytes(32).toString("base64url")

/** Lookup hash of an opaque token (tokens are random, so no pepper is needed). */
export const tokenHash = (token: string) => createHash("sha256").update(token).digest("hex")

/** An access token's claims: its user (`sub`) and session (`sid`), typed while decoding. */
const decodeClaims = Schema.decodeUnknown(Schema.Struct({ sub: Ids.Id("usr"), sid: Ids.Id("ses") }))

export const API_KEY = /^wa_(test|live)_([0-9A-Za-z]{40})$/

// A fixed argon2id hash used when the user does not exist, so both paths cost the same
// (`IdentityConfig.PASSWORD_HASHING`).
const DUMMY_HASH = "$argon2id$v=19$m=19456,t=2,p=1$2rK23dQsPnwuUjB24V+ljA$UfWlYqoLvTMfBt71JzuhhE1o9U1+VGnMtSzKckEiCJ0"

export class Credentials extends Effect.Service<Credentials>()("@switchboard/service-api/Credentials", {
  effect: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const jwtKey = new TextEncoder().encode(Redacted.value(config.jwtSecret))
    const pepper = Redacted.value(config.apiKeyPepper)

    const { memoryCost, timeCost } = config.passwordHashing
    const hashPassword = Effect.fn("Credentials.hashPassword")((password: string) =>
      Effect.promise(() => argon2Hash(password, { memoryCost, timeCost, parallelism: 1 }))
    )

    /** Constant work whether or not there is a hash to check. */
    const verifyPassword = Effect.fn("Credentials.verifyPassword")((hash: string | null, password: string) =>
      Effect.promise(() => argon2Verify(hash ?? DUMMY_HASH, password).catch(() => false)).pipe(
        Effect.map((ok) => ok && hash !== null)
      )
    )

    const signAccessToken = Effect.fn("Credentials.signAccessToken")((userId: string, sessionId: string) =>
      Effect.promise(() =>
        new SignJWT({ sid: sessionId })
          .setProtectedHeader({ alg: "HS256", typ: "JWT" })
          .setSubject(userId)
          .setIssuedAt()
          .setExpirationTime(`${config.accessTokenSeconds}s`)
          .sign(jwtKey)
      )
    )

    /** The user and session of a valid, unexpired access token. */
    const verifyAccessToken = Effect.fn("Credentials.verifyAccessToken")((token: string) =>
      Effect.tryPromise(() => jwtVerify(token, jwtKey, { algorithms: ["HS256"] })).pipe(
        Effect.flatMap(({ payload }) => decodeClaims(payload)),
        Effect.map((claims) => ({ userId: claims.sub, sessionId: claims.sid })),
        Effect.option
      )
    )

    /** A new API key secret: `wa_test_`/`wa_live_` + 40 base62 characters. */
    const newApiKeySecret = (mode: "test" | "live") => `wa_${mode}_${randomBase62(40)}`

    /** Keyed hash of an API key secret, the only form stored. */
    const apiKeyHash = (secret: string) => createHmac("sha256", pepper).update(secret).digest("hex")

    const sameHash = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

    return {
      hashPassword,
      verifyPassword,
      signAccessToken,
      verifyAccessToken,
      newApiKeySecret,
      apiKeyHash,
      sameHash,
      accessTokenSeconds: config.accessTokenSeconds,
      refreshTokenSeconds: config.refreshTokenSeconds,
      verificationSeconds: config.verificationSeconds,
      publicUrl: config.publicUrl
    } as const
  })
}) {}
