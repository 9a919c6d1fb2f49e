/**
 * Passwords are hashed with OWASP's argon2id recommendation (19 MiB, 2 passes, 1 lane) by every
 * process (`IdentityConfig.PASSWORD_HASHING`); the tests' app layer lowers the cost, and a hash of
 * either cost verifies under either, since a hash records its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { parseOptions } from "@node-rs/argon2"
import type { ConfigError } from "effect"
import { Effect, Layer } from "effect"
import { IdentityConfig } from "../src/index.js"
import { Credentials } from "../src/services/Credentials.js"

const PASSWORD = "correct horse battery staple"
const credentialsWith = (identity: Layer.Layer<IdentityConfig.IdentityConfig, ConfigError.ConfigError>) =>
  Credentials.Default.pipe(Layer.provide(identity))
const hashWith = (identity: Layer.Layer<IdentityConfig.IdentityConfig, ConfigError.ConfigError>) =>
  Effect.flatMap(Credentials, (c) => c.hashPassword(PASSWORD)).pipe(Effect.provide(credentialsWith(identity)))

describe("password hashing", () => {
  it.effect("a process hashes with argon2id, 19 MiB and 2 passes in 1 lane", () =>
    Effect.gen(function*() {
      for (const identity of [IdentityConfig.layerFromEnv, IdentityConfig.layer({})]) {
        const hash = yield* hashWith(identity)
        assert.match(hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
        assert.deepInclude(parseOptions(hash), { memoryCost: 19_456, timeCost: 2, parallelism: 1 })
      }
    }))

  it.effect("a hash of either cost verifies under either, and a wrong password fails", () =>
    Effect.gen(function*() {
      const cheap = IdentityConfig.layer({ passwordHashing: { memoryCost: 64, timeCost: 1 } })
      const fromCheap = yield* hashWith(cheap)
      assert.match(fromCheap, /^\$argon2id\$v=19\$m=64,t=1,p=1\$/)
      const fromProcess = yield* hashWith(IdentityConfig.layerFromEnv)
      for (const identity of [cheap, IdentityConfig.layerFromEnv]) {
        const checked = yield* Effect.flatMap(Credentials, (c) =>
          Effect.all([
            c.verifyPassword(fromCheap, PASSWORD),
            c.verifyPassword(fromProcess, PASSWORD),
            c.verifyPassword(fromCheap, "wrong horse"),
            c.verifyPassword(null, PASSWORD)
          ])).pipe(Effect.provide(credentialsWith(identity)))
        assert.deepStrictEqual(checked, [true, true, false, false])
      }
    }))
})
