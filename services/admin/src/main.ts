/**
 * The operator CLI: `npm run admin -- <command> [options]`. It uses the service's
 * configuration: `DATABASE_URL`, or the embedded database in `DATA_DIR` (stop the service first:
 * the embedded database has one owner at a time), and `REDIS_URL` (suspending a workspace tells
 * every api node at once). Prints JSON; exits 1 with a message on error.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Database, DatabaseConfig, Migrations } from "@switchboard/db"
import { Invalidations, Redis, SecretsConfig, StartupSafety } from "@switchboard/infra"
import { IdentityConfig, Mailer, Operator, SecretsReseal } from "@switchboard/service-api"
import { Cause, Console, Effect, Either, Layer, Logger, LogLevel } from "effect"
import * as Command from "./Command.js"

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

const run = (command: Command.Command) =>
  Effect.gen(function*() {
    const operator = yield* Operator.Operator
    switch (command._tag) {
      case "create-user": {
        const { _tag, ...user } = command
        return yield* operator.createUser(user)
      }
      case "set-plan":
        return yield* operator.setPlan(command.workspace, command.plan)
      case "override":
        return yield* operator.override(command.workspace, command.entitlement, command.value)
      case "suspend":
        return yield* operator.setStatus(command.id, "suspended")
      case "reactivate":
        return yield* operator.setStatus(command.id, "active")
      case "qr-limit":
        return yield* operator.qrLimit(command.workspace, command.channel, command.limit)
      case "qr-warm-up":
        return yield* operator.qrWarmUp(command.workspace, command.channel, command.setting)
      case "reseal-secrets":
        return yield* resealSecrets
      case "list-users":
        return yield* operator.listUsers
      case "list-workspaces":
        return yield* operator.listWorkspaces
      case "migrate":
        // the layer below applied what was missing before this command ran (`Migrations.layer`)
        return { migrations: (yield* Migrations.applied).length }
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
  process.stdout.write(Command.USAGE + "\n")
  process.exit(first === undefined ? 1 : 0)
}
// a mistake on the command line is answered before any database is opened (or created)
const command = Either.getOrElse(Command.parse(process.argv.slice(2)), (refusal) => {
  process.stderr.write(refusal + "\n")
  return process.exit(1)
})
// a production operator with unsafe settings is stopped before touching the database
StartupSafety.refuseUnsafeProduction("admin")

StartupSafety.warnings("admin").pipe(
  Effect.zipRight(run(command)),
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
