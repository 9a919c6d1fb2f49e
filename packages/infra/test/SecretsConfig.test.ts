import { assert, describe, it } from "@effect/vitest"
import { SecretBox, SecretsConfig } from "@switchboard/infra"
import { ConfigProvider, Effect, Either, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { inspect } from "node:util"

const newKey = () => Redacted.make(randomBytes(32))

const fromEnv = (env: Record<string, string>) =>
  Effect.runSync(
    Effect.either(SecretsConfig.keyring).pipe(
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
    )
  )

describe("SecretsConfig.Keyring", () => {
  it("seals with the current key", () => {
    const a = newKey()
    const sealed = SecretsConfig.makeKeyring(a, [newKey()]).seal("whsec_abc")
    assert.isTrue(SecretBox.isSealed(sealed))
    assert.strictEqual(SecretBox.open(Redacted.value(a), sealed), "whsec_abc")
  })

  it("opens a value sealed under a previous key, and tells it was not the current one", () => {
    const a = newKey()
    const b = newKey()
    const sealedA = SecretsConfig.makeKeyring(a).seal("old")
    const rotating = SecretsConfig.makeKeyring(b, [newKey(), a])
    assert.strictEqual(rotating.open(sealedA), "old")
    assert.deepStrictEqual(rotating.openWithKey(sealedA), { plaintext: "old", current: false })
    assert.deepStrictEqual(rotating.openWithKey(rotating.seal("new")), { plaintext: "new", current: true })
  })

  it("fails on a value no key opens, a tampered value and an unknown format", () => {
    const sealed = SecretsConfig.makeKeyring(newKey()).seal("secret")
    const keyring = SecretsConfig.makeKeyring(newKey(), [newKey()])
    assert.throws(() => keyring.open(sealed))
    const own = keyring.seal("secret")
    const [v, iv, tag, data] = own.split(":")
    const flipped = Buffer.from(data!, "base64")
    flipped[0] = flipped[0]! ^ 1
    assert.throws(() => keyring.open([v, iv, tag, flipped.toString("base64")].join(":")))
    assert.throws(() => keyring.open("{\"plain\":true}"))
  })

  it("never seals with a previous key", () => {
    const a = newKey()
    const b = newKey()
    const keyring = SecretsConfig.makeKeyring(b, [a])
    for (let i = 0; i < 20; i++) {
      const sealed = keyring.seal(`value ${i}`)
      assert.strictEqual(SecretBox.open(Redacted.value(b), sealed), `value ${i}`)
      assert.throws(() => SecretBox.open(Redacted.value(a), sealed))
    }
    // the current key listed among the previous ones is not kept twice
    assert.strictEqual(SecretsConfig.makeKeyring(b, [b, a]).previous.length, 1)
  })

  it("never prints a key", () => {
    const a = newKey()
    const b = newKey()
    const keyring = SecretsConfig.makeKeyring(b, [a])
    for (const shown of [JSON.stringify(keyring), inspect(keyring, { depth: 5 }), String(keyring.current)]) {
      for (const key of [a, b]) {
        assert.notInclude(shown, Redacted.value(key).toString("base64"))
        assert.notInclude(shown, Redacted.value(key).toString("hex"))
      }
    }
  })

  it("reads SECRETS_ENCRYPTION_KEY and the comma-separated SECRETS_ENCRYPTION_KEY_PREVIOUS", () => {
    const [a, b, c] = [randomBytes(32), randomBytes(32), randomBytes(32)]
    const keyring = Either.getOrThrow(fromEnv({
      SECRETS_ENCRYPTION_KEY: c.toString("base64"),
      SECRETS_ENCRYPTION_KEY_PREVIOUS: ` ${a.toString("base64")}, ${b.toString("base64")} `
    }))
    assert.isTrue(Redacted.value(keyring.current).equals(c))
    assert.deepStrictEqual(keyring.previous.map((k) => Redacted.value(k).toString("hex")), [
      a.toString("hex"),
      b.toString("hex")
    ])
    assert.strictEqual(keyring.open(SecretBox.seal(b, "x")), "x")

    const unset = Either.getOrThrow(fromEnv({}))
    assert.isTrue(SecretsConfig.isDevelopmentKey(unset.current))
    assert.deepStrictEqual(unset.previous, [])
    assert.deepStrictEqual(Either.getOrThrow(fromEnv({ SECRETS_ENCRYPTION_KEY_PREVIOUS: "" })).previous, [])

    const short = fromEnv({
      SECRETS_ENCRYPTION_KEY_PREVIOUS: `${a.toString("base64")},${randomBytes(16).toString("base64")}`
    })
    assert.isTrue(Either.isLeft(short))
    assert.include(String(Either.isLeft(short) && short.left), "SECRETS_ENCRYPTION_KEY_PREVIOUS")
    assert.isTrue(Either.isLeft(fromEnv({ SECRETS_ENCRYPTION_KEY: randomBytes(31).toString("base64") })))
  })
})
