/**
 * The operator CLI's command line, read and checked before anything is opened: a typo, a missing
 * option or a value out of range is answered at once, and never creates or migrates a database
 * (`DATA_DIR`) or touches the one in `DATABASE_URL`. The operator's own checks (a workspace that
 * exists, a QR channel) need the database and stay in `Operator`.
 */
import { Plans } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Either } from "effect"
import { parseArgs } from "node:util"

export const USAGE = `Usage: npm run admin -- <command> [options]
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
  reseal-secrets   (re-seals every secret at rest under SECRETS_ENCRYPTION_KEY; exits 1 if no key opens some value)
  migrate          (applies the database migrations not applied yet and prints how many are applied in all; every service also migrates at start)`

export type Command =
  | { readonly _tag: "create-user" } & Operator.NewUser
  | { readonly _tag: "set-plan"; readonly workspace: string; readonly plan: Plans.PlanName }
  | {
    readonly _tag: "override"
    readonly workspace: string
    readonly entitlement: string
    /** `null`: unlimited; `undefined`: back to the plan's value */
    readonly value: Plans.EntitlementValue | null | undefined
  }
  | { readonly _tag: "suspend" | "reactivate"; readonly id: string }
  | {
    readonly _tag: "qr-limit"
    readonly workspace: string
    readonly channel: string | undefined
    /** `undefined`: cleared */
    readonly limit: number | undefined
  }
  | {
    readonly _tag: "qr-warm-up"
    readonly workspace: string
    readonly channel: string
    readonly setting: Operator.WarmUpSetting
  }
  | { readonly _tag: "reseal-secrets" | "list-users" | "list-workspaces" | "migrate" }

const OPTIONS = {
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
} as const

/** A command-line mistake: the message the CLI prints (exit 1). */
class Refused {
  constructor(readonly message: string) {}
}

const parsePlan = (value: string | undefined): Plans.PlanName => {
  const plan = (Plans.PLANS as ReadonlyArray<string>).find((p) => p === value)
  if (plan === undefined) throw new Refused(`--plan must be one of ${Plans.PLANS.join(", ")}`)
  return plan as Plans.PlanName
}

const parseValue = (raw: string): Plans.EntitlementValue => {
  if (raw === "true") return true
  if (raw === "false") return false
  const n = Number(raw)
  return raw.trim() !== "" && Number.isFinite(n) ? n : raw
}

const wholeNumber = (raw: string) => (/^\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN)

const refuseIf = (refusal: string | undefined) => {
  if (refusal !== undefined) throw new Refused(refusal)
}

/** The command `argv` (what follows `npm run admin --`) asks for, or why it is refused. */
export const parse = (argv: ReadonlyArray<string>): Either.Either<Command, string> => {
  const [command, ...rest] = argv
  try {
    const { values } = parseArgs({ args: [...rest], options: OPTIONS })
    const need = (name: keyof typeof values): string => {
      const value = values[name]
      if (typeof value !== "string" || value === "") throw new Refused(`--${name} is required`)
      return value
    }
    switch (command) {
      case "create-user":
        return Either.right({
          _tag: command,
          email: need("email"),
          password: need("password"),
          name: need("name"),
          workspace: need("workspace"),
          plan: parsePlan(values.plan ?? "free"),
          verified: values.verified === true,
          ifMissing: values["if-missing"] === true
        })
      case "set-plan":
        return Either.right({ _tag: command, workspace: need("workspace"), plan: parsePlan(values.plan) })
      case "override":
        return Either.right({
          _tag: command,
          workspace: need("workspace"),
          entitlement: need("entitlement"),
          value: values.clear ? undefined : values.unlimited ? null : parseValue(need("value"))
        })
      case "suspend":
      case "reactivate":
        return Either.right({ _tag: command, id: need("id") })
      case "qr-limit": {
        if ((values.limit === undefined) === (values.clear !== true)) {
          throw new Refused("Give one of --limit N or --clear")
        }
        const limit = values.clear ? undefined : wholeNumber(values.limit!)
        if (limit !== undefined) refuseIf(Operator.qrLimitRefusal(limit))
        return Either.right({
          _tag: command,
          workspace: need("workspace"),
          channel: values.channel || undefined,
          limit
        })
      }
      case "qr-warm-up": {
        const given = [values.off === true, values.max !== undefined, values.default === true].filter(Boolean).length
        if (given !== 1) throw new Refused("Give one of --off, --max N or --default")
        const setting = values.off
          ? "off" as const
          : values.default
          ? "default" as const
          : { max: wholeNumber(values.max!) }
        if (typeof setting === "object") refuseIf(Operator.warmUpMaxRefusal(setting.max))
        return Either.right({ _tag: command, workspace: need("workspace"), channel: need("channel"), setting })
      }
      case "reseal-secrets":
      case "list-users":
      case "list-workspaces":
      case "migrate":
        return Either.right({ _tag: command })
      default:
        return Either.left(USAGE)
    }
  } catch (e) {
    // `parseArgs` throws on an unknown option or a missing value, with a one-line message
    return Either.left(e instanceof Refused ? e.message : e instanceof Error ? e.message : String(e))
  }
}
