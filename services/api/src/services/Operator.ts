/**
 * What operators do through the CLI: bootstrap users, plans, overrides,
 * suspension, lowering the QR safety cap, a QR channel's warm-up.
 */
import { ChannelsRepo, QrSafetyRepo, QrWarmUpRepo, UsersRepo, WorkspacesRepo } from "@switchboard/db"
import { Plans, QrSafetyWindow, type QrWarmUp, Schemas } from "@switchboard/domain"
import { Invalidations } from "@switchboard/infra"
import { Clock, Data, Effect, Option } from "effect"
import { Accounts } from "./Accounts.js"
import { workspaceTopic } from "./ApiKeyCache.js"
import { Credentials } from "./Credentials.js"

const OPERATOR_LIST_LIMIT = 1000

export class OperatorError extends Data.TaggedError("OperatorError")<{ readonly message: string }> {}

/** A user to create, with a workspace of their own (`npm run admin -- create-user`). */
export interface NewUser {
  readonly email: string
  readonly password: string
  readonly name: string
  readonly workspace: string
  readonly plan: Plans.PlanName
  readonly verified: boolean
  /** An account with this e-mail and this password already there is not an error (scripts re-run). */
  readonly ifMissing?: boolean
}

/** A QR channel's warm-up: off, a lower daily ceiling, or the default ramp. */
export type WarmUpSetting = "off" | "default" | { readonly max: number }

/** Why a QR safety cap is refused (a whole number from 0 to the platform's cap), or `undefined`. */
export const qrLimitRefusal = (limit: number): string | undefined =>
  Number.isInteger(limit) && limit >= 0 && limit <= QrSafetyWindow.QR_DAILY_CAP
    ? undefined
    : `--limit must be a whole number from 0 to ${QrSafetyWindow.QR_DAILY_CAP}: the QR safety cap can only be lowered, ` +
      `never raised above the platform's ${QrSafetyWindow.QR_DAILY_CAP} per 24 hours`

/** Why a warm-up ceiling is refused (a whole number from 0 to the platform's cap), or `undefined`. */
export const warmUpMaxRefusal = (max: number): string | undefined =>
  Number.isInteger(max) && max >= 0 && max <= QrSafetyWindow.QR_DAILY_CAP
    ? undefined
    : `--max must be a whole number from 0 to ${QrSafetyWindow.QR_DAILY_CAP}: it can only lower the warm-up's daily caps`

export class Operator extends Effect.Service<Operator>()("@switchboard/service-api/Operator", {
  effect: Effect.gen(function*() {
    const accounts = yield* Accounts
    const credentials = yield* Credentials
    const users = yield* UsersRepo.UsersRepo
    const workspaces = yield* WorkspacesRepo.WorkspacesRepo
    const channels = yield* ChannelsRepo.ChannelsRepo
    const qrLimits = yield* QrSafetyRepo.QrSafetyRepo
    const warmUps = yield* QrWarmUpRepo.QrWarmUpRepo
    const invalidations = yield* Invalidations.Invalidations
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

    const createUser = Effect.fn("Operator.createUser")(function*(input: NewUser) {
      if (input.ifMissing === true) {
        const existing = yield* users.findByEmail(input.email)
        if (Option.isSome(existing)) {
          if (!(yield* credentials.verifyPassword(existing.value.passwordHash, input.password))) {
            return yield* new OperatorError({
              message: "An account with this e-mail already exists with another password: nothing changed"
            })
          }
          const [first] = yield* users.memberships(existing.value.user.id)
          return { user_id: existing.value.user.id, workspace_id: first?.id ?? null, created: false }
        }
      }
      const created = yield* accounts.createUser({ ...input, workspaceName: input.workspace }).pipe(
        Effect.mapError((e) => new OperatorError({ message: e.message }))
      )
      return { user_id: created.user.id, workspace_id: created.workspace.id, created: true }
    })

    const setPlan = Effect.fn("Operator.setPlan")(function*(workspaceId: string, plan: Plans.PlanName) {
      if (!(yield* workspaces.setPlan(workspaceId, plan, yield* now))) {
        return yield* new OperatorError({ message: `No workspace ${workspaceId}` })
      }
      return { workspace_id: workspaceId, plan }
    })

    /** Sets (or with `value = undefined`, clears) an override; `unlimited` sets null. */
    const override = Effect.fn("Operator.override")(
      function*(workspaceId: string, entitlement: string, value: Plans.EntitlementValue | undefined) {
        if (!(entitlement in Plans.ENTITLEMENTS)) {
          return yield* new OperatorError({ message: `Unknown entitlement ${entitlement}` })
        }
        if ((yield* workspaces.findById(workspaceId))._tag === "None") {
          return yield* new OperatorError({ message: `No workspace ${workspaceId}` })
        }
        if (value === undefined) yield* workspaces.clearOverride(workspaceId, entitlement as Plans.EntitlementName)
        else yield* workspaces.setOverride(workspaceId, entitlement, value, yield* now)
        return { workspace_id: workspaceId, entitlement, value: value === undefined ? "cleared" : value }
      }
    )

    const setStatus = Effect.fn("Operator.setStatus")(function*(id: string, status: "active" | "suspended") {
      const at = yield* now
      if (id.startsWith("ch_")) {
        const changed = yield* channels.setSuspended(id, status === "suspended", at)
        if (Option.isNone(changed)) {
          return yield* new OperatorError({
            message: `No channel ${id} that can be ${status === "suspended" ? "suspended" : "reactivated"}`
          })
        }
        return { id, status: changed.value }
      }
      const found = id.startsWith("usr_")
        ? yield* users.setStatus(id, status, at)
        : id.startsWith("ws_")
        ? yield* workspaces.setStatus(id, status, at)
        : false
      if (!found) return yield* new OperatorError({ message: `No user, workspace or channel ${id}` })
      // API keys of a suspended workspace are refused by the next request on every node
      if (id.startsWith("ws_")) yield* invalidations.publish(workspaceTopic(id))
      return { id, status }
    })

    /**
     * Lowers the QR safety cap of a workspace, or of one of its QR channels: a whole
     * number from 0 to the platform cap; `limit = undefined` clears it (back to the default).
     * Raising above the platform cap is refused: that takes a platform decision, not a setting.
     */
    const qrLimit = Effect.fn("Operator.qrLimit")(
      function*(workspaceId: string, channelId: string | undefined, limit: number | undefined) {
        const refused = limit === undefined ? undefined : qrLimitRefusal(limit)
        if (refused !== undefined) return yield* new OperatorError({ message: refused })
        if ((yield* workspaces.findById(workspaceId))._tag === "None") {
          return yield* new OperatorError({ message: `No workspace ${workspaceId}` })
        }
        if (channelId !== undefined) {
          const found = yield* channels.find(workspaceId, channelId)
          if (found._tag === "None") {
            return yield* new OperatorError({ message: `No channel ${channelId} in workspace ${workspaceId}` })
          }
          if (found.value.channel.provider !== "qr") {
            return yield* new OperatorError({ message: `Channel ${channelId} is not a QR channel` })
          }
        }
        const target = channelId ?? null
        if (limit === undefined) yield* qrLimits.clearLimit(workspaceId, target)
        else yield* qrLimits.setLimit(workspaceId, target, limit, yield* now)
        const overrides = yield* qrLimits.overrides(workspaceId, target)
        return {
          workspace_id: workspaceId,
          ...(channelId === undefined ? {} : { channel_id: channelId }),
          limit: limit === undefined ? "cleared" : limit,
          effective_limit: QrSafetyWindow.effectiveDailyCap(overrides)
        }
      }
    )

    /**
     * A QR channel's warm-up (docs/LIMITS.md, "Number protection"): `off`, a lower daily ceiling
     * for new contacts (`max`, 0-200: never above the ramp), or back to the default ramp.
     */
    const qrWarmUp = Effect.fn("Operator.qrWarmUp")(
      function*(workspaceId: string, channelId: string, setting: WarmUpSetting) {
        const refused = typeof setting === "object" ? warmUpMaxRefusal(setting.max) : undefined
        if (refused !== undefined) return yield* new OperatorError({ message: refused })
        const found = yield* channels.find(workspaceId, channelId)
        if (found._tag === "None") {
          return yield* new OperatorError({ message: `No channel ${channelId} in workspace ${workspaceId}` })
        }
        if (found.value.channel.provider !== "qr") {
          return yield* new OperatorError({ message: `Channel ${channelId} is not a QR channel` })
        }
        const override: QrWarmUp.WarmUpOverride = setting === "off"
          ? { _tag: "Off" }
          : setting === "default"
          ? { _tag: "Default" }
          : { _tag: "Capped", max: setting.max }
        yield* warmUps.setOverride(workspaceId, channelId, override, yield* now)
        return {
          workspace_id: workspaceId,
          channel_id: channelId,
          warm_up: setting === "off" ? "off" : setting === "default" ? "default" : `max ${setting.max} per day`
        }
      }
    )

    /** At most `OPERATOR_LIST_LIMIT` rows each: a CLI's page, never a password hash. */
    const listUsers = Effect.map(users.listAll(OPERATOR_LIST_LIMIT), (data) => ({ data }))
    const listWorkspaces = Effect.map(workspaces.listAll(OPERATOR_LIST_LIMIT), (data) => ({ data }))

    return { createUser, setPlan, override, setStatus, qrLimit, qrWarmUp, listUsers, listWorkspaces } as const
  }),
  dependencies: [
    Accounts.Default,
    Credentials.Default,
    UsersRepo.UsersRepo.Default,
    WorkspacesRepo.WorkspacesRepo.Default,
    ChannelsRepo.ChannelsRepo.Default,
    QrSafetyRepo.QrSafetyRepo.Default,
    QrWarmUpRepo.QrWarmUpRepo.Default
  ]
}) {}
