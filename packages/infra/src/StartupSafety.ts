/**
 * What a process checks about its configuration before it starts (docs/CONFIGURATION.md "Running in
 * production").
 *
 * - `NODE_ENV=production`: every unsafe setting is a problem, and the process refuses to start
 *   with ONE message listing each problem and how to fix it (exit code 1). Unsafe: a missing or
 *   development-default `JWT_SECRET`, `API_KEY_PEPPER` or `SECRETS_ENCRYPTION_KEY` (anyone who
 *   reads this repository knows the defaults, so could forge a user token or open stored secrets),
 *   a secret shorter than 32 characters, a missing or development-default `CLUSTER_SECRET` on an
 *   api node or runner (anyone could then call every entity through a runner's cluster port),
 *   `WEBHOOK_ALLOW_PRIVATE_TARGETS=true` (webhooks could reach
 *   the private network), and the embedded database (no `DATABASE_URL`: one process, no shared
 *   state, not backed up with Postgres' tools).
 * - Any other `NODE_ENV`: the development defaults apply and each unsafe setting is logged as a
 *   warning, once per process.
 *
 * Each role checks what it uses: a runner signs no token and hashes no API key; the standalone
 * process and the CLI open no cluster port.
 */
import { Effect, Layer } from "effect"

/** Development defaults, known to everyone: never in production. */
export const DEVELOPMENT_JWT_SECRET = "switchboard-development-jwt-secret-change-me"
export const DEVELOPMENT_API_KEY_PEPPER = "switchboard-development-api-key-pepper-change-me"
/** `ClusterAuthConfig`'s development secret: proves api nodes and runners to each other outside production. */
export const DEVELOPMENT_CLUSTER_SECRET = "switchboard-development-cluster-secret-change-me"
/** base64 of 32 bytes of 7 (`SecretsConfig`'s development key) */
export const DEVELOPMENT_ENCRYPTION_KEY = Buffer.alloc(32, 7).toString("base64")

export const MIN_SECRET_LENGTH = 32

export type Role = "api" | "runner" | "standalone" | "admin"

export interface Problem {
  /** the environment variable */
  readonly setting: string
  /** what is wrong, without its value */
  readonly problem: string
  /** what to do */
  readonly fix: string
}

type Env = Readonly<Record<string, string | undefined>>

const RANDOM_SECRET =
  `set it to a random value of at least ${MIN_SECRET_LENGTH} characters (e.g. \`openssl rand -base64 48\`)`

const secret = (env: Env, name: string, developmentDefault: string): Problem | undefined => {
  const value = env[name]
  if (value === undefined || value === "") {
    return { setting: name, problem: "is not set (the development default would be used)", fix: RANDOM_SECRET }
  }
  if (value === developmentDefault) {
    return { setting: name, problem: "is the development default, which anyone can read", fix: RANDOM_SECRET }
  }
  if (value.length < MIN_SECRET_LENGTH) {
    return { setting: name, problem: `is shorter than ${MIN_SECRET_LENGTH} characters`, fix: RANDOM_SECRET }
  }
  return undefined
}

const KEY_FIX = "set it to base64 of 32 random bytes (`openssl rand -base64 32`); to replace a key in use, see " +
  "docs/CONFIGURATION.md \"Rotating the secrets key\""

const encryptionKey = (env: Env): Problem | undefined => {
  const value = env["SECRETS_ENCRYPTION_KEY"]
  if (value === undefined || value === "") {
    return {
      setting: "SECRETS_ENCRYPTION_KEY",
      problem: "is not set (the development key would be used)",
      fix: KEY_FIX
    }
  }
  const key = Buffer.from(value.trim(), "base64")
  if (key.length !== 32) {
    return { setting: "SECRETS_ENCRYPTION_KEY", problem: "is not base64 of 32 bytes", fix: KEY_FIX }
  }
  if (key.equals(Buffer.from(DEVELOPMENT_ENCRYPTION_KEY, "base64"))) {
    return { setting: "SECRETS_ENCRYPTION_KEY", problem: "is the development key, which anyone can read", fix: KEY_FIX }
  }
  return undefined
}

const CLUSTER_FIX =
  `set it to the same random value of at least ${MIN_SECRET_LENGTH} characters on every api node and ` +
  "runner (`openssl rand -base64 48`); to replace one in use, see docs/CONFIGURATION.md \"Rotating the cluster secret\""

/**
 * `CLUSTER_SECRET`: comma-separated, the first proves this node, every one is accepted from a peer
 * (`ClusterAuthConfig`); each must be long and none the development default.
 */
const clusterSecret = (env: Env): Problem | undefined => {
  const value = env["CLUSTER_SECRET"]
  const secrets = (value ?? "").split(",").map((part) => part.trim()).filter((part) => part !== "")
  if (secrets.length === 0) {
    return {
      setting: "CLUSTER_SECRET",
      problem: "is not set (the development default would be used)",
      fix: CLUSTER_FIX
    }
  }
  if (secrets.includes(DEVELOPMENT_CLUSTER_SECRET)) {
    return {
      setting: "CLUSTER_SECRET",
      problem: "holds the development default, which anyone can read",
      fix: CLUSTER_FIX
    }
  }
  if (secrets.some((secret) => secret.length < MIN_SECRET_LENGTH)) {
    return {
      setting: "CLUSTER_SECRET",
      problem: `holds a secret shorter than ${MIN_SECRET_LENGTH} characters`,
      fix: CLUSTER_FIX
    }
  }
  return undefined
}

const WILDCARDS = ["0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0", "*"]

/**
 * A runner's cluster listener: `LISTEN_HOST` when set, else `HOST` (@effect/cluster's
 * `ShardingConfig`), default `localhost`. On every interface (a wildcard address) the port is
 * offered to every network the machine is on; a runner listens on its own address, the one the
 * others reach it at (docs/OPERATING.md "The cluster port").
 */
const clusterListener = (env: Env): Problem | undefined => {
  const listen = (env["LISTEN_HOST"] ?? "").trim()
  const setting = listen !== "" ? "LISTEN_HOST" : "HOST"
  const value = (listen !== "" ? listen : env["HOST"] ?? "").trim()
  return WILDCARDS.includes(value)
    ? {
      setting,
      problem: "is a wildcard address: the cluster port would listen on every interface",
      fix: "set HOST to this runner's own address, the one api nodes and other runners reach it at " +
        "(on Kubernetes the pod IP, `status.podIP`), and leave LISTEN_HOST unset"
    }
    : undefined
}

/** Effect's `Config.boolean` reading: true, yes, on, 1 (any case). */
const isTrue = (value: string | undefined) => ["true", "yes", "on", "1"].includes((value ?? "").trim().toLowerCase())

/** Every unsafe setting for `role`, whatever `NODE_ENV` says. */
export const unsafeSettings = (role: Role, env: Env): ReadonlyArray<Problem> => {
  const signsTokens = role !== "runner"
  const joinsCluster = role === "api" || role === "runner"
  const found: Array<Problem | undefined> = [
    signsTokens ? secret(env, "JWT_SECRET", DEVELOPMENT_JWT_SECRET) : undefined,
    signsTokens ? secret(env, "API_KEY_PEPPER", DEVELOPMENT_API_KEY_PEPPER) : undefined,
    encryptionKey(env),
    joinsCluster ? clusterSecret(env) : undefined,
    role === "runner" ? clusterListener(env) : undefined,
    isTrue(env["WEBHOOK_ALLOW_PRIVATE_TARGETS"])
      ? {
        setting: "WEBHOOK_ALLOW_PRIVATE_TARGETS",
        problem: "is true: webhooks could reach private addresses and any port",
        fix: "remove it (or set it to false); it is for local development only"
      }
      : undefined,
    env["DATABASE_URL"] === undefined || env["DATABASE_URL"] === ""
      ? {
        setting: "DATABASE_URL",
        problem: "is not set (the embedded database would be used: one process, for development)",
        fix: "set it to your PostgreSQL server, e.g. postgres://user:password@host:5432/switchboard"
      }
      : undefined
  ]
  return found.filter((p): p is Problem => p !== undefined)
}

export const isProduction = (env: Env): boolean => env["NODE_ENV"] === "production"

/** The one message a production process refuses to start with. */
export const refusal = (role: Role, problems: ReadonlyArray<Problem>): string =>
  [
    `Switchboard ${role} refuses to start: NODE_ENV=production and ${problems.length} unsafe setting${
      problems.length === 1 ? "" : "s"
    }:`,
    ...problems.map((p, i) => `  ${i + 1}. ${p.setting} ${p.problem}: ${p.fix}.`),
    "Fix these in the environment (see docs/CONFIGURATION.md \"Running in production\") and start again."
  ].join("\n")

/**
 * Stops the process (exit code 1) with one message on stderr when it runs in production with
 * unsafe settings. Called first thing by every main, before any layer is built.
 */
export const refuseUnsafeProduction = (role: Role, env: Env = process.env): void => {
  if (!isProduction(env)) return
  const problems = unsafeSettings(role, env)
  if (problems.length === 0) return
  process.stderr.write(refusal(role, problems) + "\n")
  process.exit(1)
}

/**
 * Logged once when the process starts: outside production, one warning per unsafe setting; in any
 * mode, a note while `SECRETS_ENCRYPTION_KEY_PREVIOUS` holds keys (a rotation to finish).
 */
export const warnings = (role: Role, env: Env = process.env): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (!isProduction(env)) {
      // the embedded database is the point of development mode: nothing to warn about
      for (const p of unsafeSettings(role, env).filter((p) => p.setting !== "DATABASE_URL")) {
        yield* Effect.logWarning(
          `${p.setting} ${p.problem.replace(" would be used", " is used")}: fine for development, never in production`
        )
      }
    }
    const previous = (env["SECRETS_ENCRYPTION_KEY_PREVIOUS"] ?? "").split(",").filter((k) => k.trim() !== "").length
    if (previous > 0) {
      yield* Effect.logInfo(
        `SECRETS_ENCRYPTION_KEY_PREVIOUS holds ${previous} key(s): secrets sealed with them are still read; ` +
          "run `npm run admin -- reseal-secrets`, then remove them"
      )
    }
  })

/** `warnings` as a layer, for the mains to start with. */
export const warningsLayer = (role: Role): Layer.Layer<never> => Layer.effectDiscard(warnings(role))
