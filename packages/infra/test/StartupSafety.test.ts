import { assert, describe, it } from "@effect/vitest"
import { StartupSafety } from "@switchboard/infra"

const KEY = Buffer.alloc(32, 42).toString("base64")
const SAFE = {
  NODE_ENV: "production",
  JWT_SECRET: "a".repeat(40),
  API_KEY_PEPPER: "b".repeat(40),
  SECRETS_ENCRYPTION_KEY: KEY,
  CLUSTER_SECRET: "c".repeat(40),
  DATABASE_URL: "postgres://db.internal/switchboard"
}
const settings = (role: StartupSafety.Role, env: Record<string, string | undefined>) =>
  StartupSafety.unsafeSettings(role, env).map((p) => p.setting)

describe("StartupSafety", () => {
  it("finds nothing unsafe in a complete production configuration", () => {
    assert.deepStrictEqual(settings("api", SAFE), [])
    assert.deepStrictEqual(settings("standalone", SAFE), [])
  })

  it("refuses every secret that is missing, the development default, or too short", () => {
    for (const name of ["JWT_SECRET", "API_KEY_PEPPER"]) {
      const developmentDefault = name === "JWT_SECRET"
        ? StartupSafety.DEVELOPMENT_JWT_SECRET
        : StartupSafety.DEVELOPMENT_API_KEY_PEPPER
      for (const value of [undefined, "", developmentDefault, "x".repeat(31)]) {
        assert.deepStrictEqual(settings("api", { ...SAFE, [name]: value }), [name], `${name}=${value}`)
      }
      assert.deepStrictEqual(settings("api", { ...SAFE, [name]: "x".repeat(32) }), [], `${name} of 32 characters`)
    }
    for (
      const value of [undefined, "", StartupSafety.DEVELOPMENT_ENCRYPTION_KEY, Buffer.alloc(16).toString("base64")]
    ) {
      assert.deepStrictEqual(settings("runner", { ...SAFE, SECRETS_ENCRYPTION_KEY: value }), ["SECRETS_ENCRYPTION_KEY"])
    }
  })

  it("refuses a cluster secret list that is missing, holds the development secret or a short one", () => {
    for (
      const value of [
        undefined,
        "",
        " , ",
        StartupSafety.DEVELOPMENT_CLUSTER_SECRET,
        `${"c".repeat(40)},${StartupSafety.DEVELOPMENT_CLUSTER_SECRET}`,
        `${"c".repeat(40)},short`
      ]
    ) {
      assert.deepStrictEqual(settings("runner", { ...SAFE, CLUSTER_SECRET: value }), ["CLUSTER_SECRET"], `${value}`)
      assert.deepStrictEqual(settings("api", { ...SAFE, CLUSTER_SECRET: value }), ["CLUSTER_SECRET"], `${value}`)
    }
    // a rotation in progress: two long secrets
    assert.deepStrictEqual(settings("runner", { ...SAFE, CLUSTER_SECRET: `${"c".repeat(40)}, ${"d".repeat(32)}` }), [])
    // the standalone process and the CLI open no cluster port
    assert.deepStrictEqual(settings("standalone", { ...SAFE, CLUSTER_SECRET: undefined }), [])
    assert.deepStrictEqual(settings("admin", { ...SAFE, CLUSTER_SECRET: undefined }), [])
  })

  it("refuses private webhook targets and the embedded database", () => {
    for (const value of ["true", "TRUE", "1", "yes", "on"]) {
      assert.deepStrictEqual(settings("runner", { ...SAFE, WEBHOOK_ALLOW_PRIVATE_TARGETS: value }), [
        "WEBHOOK_ALLOW_PRIVATE_TARGETS"
      ])
    }
    assert.deepStrictEqual(settings("runner", { ...SAFE, WEBHOOK_ALLOW_PRIVATE_TARGETS: "false" }), [])
    assert.deepStrictEqual(settings("standalone", { ...SAFE, DATABASE_URL: undefined }), ["DATABASE_URL"])
  })

  it("refuses a runner whose cluster port would listen on every interface", () => {
    const runner = { ...SAFE, CLUSTER_SECRET: "c".repeat(40) }
    for (const host of ["0.0.0.0", "::", "[::]"]) {
      assert.include(settings("runner", { ...runner, HOST: host }), "HOST", host)
      assert.include(settings("runner", { ...runner, HOST: "10.0.0.7", LISTEN_HOST: host }), "LISTEN_HOST", host)
    }
    for (const host of [undefined, "10.0.0.7", "runner-1", "localhost"]) {
      const found = settings("runner", { ...runner, HOST: host })
      assert.notInclude(found, "HOST", String(host))
      assert.notInclude(found, "LISTEN_HOST", String(host))
    }
    // an api node listens on no cluster port
    assert.notInclude(settings("api", { ...runner, HOST: "0.0.0.0" }), "HOST")
  })

  it("checks what each role uses: a runner signs no token and hashes no API key", () => {
    assert.deepStrictEqual(settings("runner", { ...SAFE, JWT_SECRET: undefined, API_KEY_PEPPER: undefined }), [])
    assert.deepStrictEqual(settings("admin", { ...SAFE, JWT_SECRET: undefined }), ["JWT_SECRET"])
  })

  it("lists every problem in one message, with the fix and without the values", () => {
    const env = { NODE_ENV: "production", JWT_SECRET: "tooshort-secret-value", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" }
    const message = StartupSafety.refusal("api", StartupSafety.unsafeSettings("api", env))
    assert.match(message, /^Switchboard api refuses to start: NODE_ENV=production and 6 unsafe settings:/)
    for (
      const name of [
        "JWT_SECRET",
        "API_KEY_PEPPER",
        "SECRETS_ENCRYPTION_KEY",
        "CLUSTER_SECRET",
        "WEBHOOK_ALLOW_PRIVATE_TARGETS",
        "DATABASE_URL"
      ]
    ) {
      assert.include(message, `. ${name} `)
    }
    assert.include(message, "openssl rand")
    assert.notInclude(message, "tooshort-secret-value")
  })
})
