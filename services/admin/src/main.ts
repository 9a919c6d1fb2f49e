/**
 * The operator CLI: `npm run admin -- <command> [options]`. It uses the service's
 * configuration: `DATABASE_URL`, or the embedded database in `DATA_DIR` (stop the service first:
 * the embedded database has one owner at a time), and `REDIS_URL` (suspending a workspace tells
 * every api node at once). Prints JSON; exits 1 with a message on error.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Database, DatabaseConfig, Migrations } from "@switchboard/db"
import { Plans } from "@switchboard/domain"
import { Invalidations, Redis, SecretsConfig, StartupSafety } from "@switchboard/infra"
import { IdentityConfig, Mailer, Operator, SecretsReseal } from "@switchboard/service-api"
import { Cause, Console, Effect, Layer, Logger, LogLevel } from "effect"
import { parseArgs } from "node:util"

const USAGE = `Usage: npm run admin -- <command> [options]
  create-user --email E --password P --name N --workspace W [--plan free|starter|growth|enterprise] [--verified] [--if-missing]
      --if-missing: an account with this e-mail and password already there is kept ("created": false, exit 0)
  set-plan --workspace ws_... --plan free|starter|growth|enterprise
  override --workspace ws_... --entitlement NAME (--value V | --unlimited | --clear)
  suspend --id usr_...|ws_...|ch_...
  reactivate --id usr_...|ws_...|ch_...
  qr-limit --workspace ws_... [--channel ch_...] (--limit N | --clear)   lowers the QR safety cap (0-200 per 24 h)
  qr-warm-up --workspace ws_... --channel ch_... (--off | --max N | --default)   a QR channel's warm-up for new contacts: off, a lower daily ceiling (0-200), or the default ramp
  list-users       (id, e-mail, name, status, verified, workspaces with roles; at most 1000)
  list-workspaces  (id, name, plan, status, owner's e-mail, members; at most 1000)
  reseal-secrets   (re-seals every secret at rest under SECRETS_ENCRYPTION_KEY; exits 1 if no key opens some value)`

const fail = (message: string) => Effect.fail(new Error(message))

const parsePlan = (value: string | undefined): Effect.Effect<Plans.PlanName, Error> =>
  (Plans.PLANS as ReadonlyArray<string>).includes(value ?? "")
    ? Effect.succeed(value as Plans.PlanName)
    : fail(`--plan must be one of ${Plans.PLANS.join(", ")}`)

const parseValue = (raw: string): Plans.EntitlementValue => {
  if (raw === "true") return true
  if (raw === "false") return false
  const n = Number(raw)
  return raw.trim() !== "" && Number.isFinite(n) ? n : raw
}

/**
 * The end of a key rotation: every secret at rest sealed under the current key. Prints the counts;
 * exits 1 when some value no key opens (left as it is).
 */
const resealSecrets = Effect.gen(function*() {
  const keyring = yield* SecretsConfig.keyring
  const counts = yield* (yield* SecretsReseal.SecretsReseal).run(keyring)
  if (counts.failed > 0) {
    yield* Console.error(`no configured key opens ${counts.failed} value(s): left as they are`)
    yield* Effect.sync(() => (process.exitCode = 1))
  }
  return counts
})

const program = Effect.gen(function*() {
  const [command, ...rest] = process.argv.slice(2)
  yield* StartupSafety.warnings("admin")
  const { values } = yield* Effect.try({
    try: () =>
      parseArgs({
        args: rest,
        options: {
          email: { type: "string" },
          password: { type: "string" },
          name: { type: "string" },
          workspace: { type: "string" },
          plan: { type: "string" },
          verified: { type: "boolean" },
          "if-missing": { type: "boolean" },
          entitlement: { type: "string" },
          value: { type: "string" },
          unlimited: { type: "boolean" },
          clear: { type: "boolean" },
          id: { type: "string" },
          channel: { type: "string" },
          limit: { type: "string" },
          off: { type: "boolean" },
          max: { type: "string" },
          default: { type: "boolean" }
        }
      }),
    catch: (e) => new Error(String((e as Error).message))
  })
  const operator = yield* Operator.Operator
  const need = (name: keyof typeof values) =>
    typeof values[name] === "string" && values[name] !== ""
      ? Effect.succeed(values[name] as string)
      : fail(`--${name} is required`)
  switch (command) {
    case "create-user":
      return yield* operator.createUser({
        email: yield* need("email"),
        password: yield* need("password"),
        name: yield* need("name"),
        workspace: yield* need("workspace"),
        plan: yield* parsePlan(values.plan ?? "free"),
        verified: values.verified === true,
        ifMissing: values["if-missing"] === true
      })
    case "set-plan":
      return yield* operator.setPlan(yield* need("workspace"), yield* parsePlan(values.plan))
    case "override": {
      const value = values.clear ? undefined : values.unlimited ? null : parseValue(yield* need("value"))
      return yield* operator.override(yield* need("workspace"), yield* need("entitlement"), value)
    }
    case "suspend":
      return yield* operator.setStatus(yield* need("id"), "suspended")
    case "reactivate":
      return yield* operator.setStatus(yield* need("id"), "active")
    case "qr-limit": {
      if ((values.limit === undefined) === (values.clear !== true)) {
        return yield* fail("Give one of --limit N or --clear")
      }
      const limit = values.clear ? undefined : /^\d+$/.test(values.limit!.trim()) ? Number(values.limit) : Number.NaN
      return yield* operator.qrLimit(yield* need("workspace"), values.channel || undefined, limit)
    }
    case "qr-warm-up": {
      const given = [values.off === true, values.max !== undefined, values.default === true].filter(Boolean).length
      if (given !== 1) return yield* fail("Give one of --off, --max N or --default")
      const setting = values.off
        ? "off" as const
        : values.default
        ? "default" as const
        : { max: /^\d+$/.test(values.max!.trim()) ? Number(values.max) : Number.NaN }
      return yield* operator.qrWarmUp(yield* need("workspace"), yield* need("channel"), setting)
    }
    case "reseal-secrets":
      return yield* resealSecrets
    case "list-users":
      return yield* operator.listUsers
    case "list-workspaces":
      return yield* operator.listWorkspaces
    default:
      return yield* fail(USAGE)
  }
})

const Live = Layer.mergeAll(Operator.Operator.Default, SecretsReseal.SecretsReseal.Default).pipe(
  Layer.provide([IdentityConfig.layerFromEnv, Mailer.layerFromEnv]),
  // suspending a workspace tells every api node to drop its cached keys (`REDIS_URL`)
  Layer.provide(Invalidations.layer.pipe(Layer.provide(Redis.clientLayer), Layer.provide(Redis.configLayerFromEnv))),
  Layer.provideMerge(Migrations.layer),
  Layer.provideMerge(Database.layer),
  Layer.provide(DatabaseConfig.layerFromEnv),
  Layer.orDie
)

const messageOf = (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : String(error)
}

const [first] = process.argv.slice(2)
if (first === undefined || first === "--help" || first === "-h" || first === "help") {
  // before any layer: help needs no database and prints no configuration warning
  process.stdout.write(USAGE + "\n")
  process.exit(first === undefined ? 1 : 0)
}
// a production operator with unsafe settings is stopped before touching the database
StartupSafety.refuseUnsafeProduction("admin")

program.pipe(
  Effect.flatMap((result) => Console.log(JSON.stringify(result))),
  Effect.provide(Live),
  Effect.catchAllCause((cause) =>
    Console.error(messageOf(cause)).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))
  ),
  Logger.withMinimumLogLevel(LogLevel.Warning),
  // logs on stderr: stdout carries only the JSON result
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.jsonLogger))),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
