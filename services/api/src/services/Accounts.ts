/** Registration, e-mail verification, login, refresh rotation, logout. */
import { HttpServer } from "@effect/platform"
import { SessionsRepo, UsersRepo } from "@switchboard/db"
import { Errors, Identity, Ids, Pagination, type Plans, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"
import { HttpConfig } from "../HttpConfig.js"
import * as PublicUrl from "../PublicUrl.js"
import { Credentials, randomToken, tokenHash } from "./Credentials.js"
import { Mailer } from "./Mailer.js"

export class Accounts extends Effect.Service<Accounts>()("@switchboard/service-api/Accounts", {
  effect: Effect.gen(function*() {
    const users = yield* UsersRepo.UsersRepo
    const sessions = yield* SessionsRepo.SessionsRepo
    const credentials = yield* Credentials
    const mailer = yield* Mailer
    // links point where people reach this server (the operator CLI has no listener: `PublicUrl`)
    const server = yield* Effect.serviceOption(HttpServer.HttpServer)
    const http = yield* Effect.serviceOption(HttpConfig)
    const publicUrl = PublicUrl.of({
      publicUrl: credentials.publicUrl,
      address: Option.getOrUndefined(Option.map(server, (s) => s.address)),
      basePath: Option.match(http, { onNone: () => "", onSome: (c) => c.basePath })
    })

    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)
    const later = (seconds: number) =>
      Effect.map(Clock.currentTimeMillis, (t) => Schemas.toTimestamp(t + seconds * 1000))

    /** Creates a user with a workspace; used by registration and the operator CLI. */
    const createUser = Effect.fn("Accounts.createUser")(function*(input: {
      readonly email: string
      readonly password: string
      readonly name: string
      readonly workspaceName: string
      readonly plan: Plans.PlanName
      readonly verified: boolean
    }) {
      const userId = yield* Ids.newId("usr")
      const workspaceId = yield* Ids.newId("ws")
      const at = yield* now
      const passwordHash = yield* credentials.hashPassword(input.password)
      yield* users.createWithWorkspace({
        userId,
        workspaceId,
        email: input.email,
        name: input.name,
        passwordHash,
        workspaceName: input.workspaceName,
        plan: input.plan,
        verifiedAt: input.verified ? at : null,
        now: at
      }).pipe(
        Effect.catchTag("UniqueViolation", () =>
          new Errors.Conflict({
            message: "An account with this e-mail already exists",
            details: { reason: "email_taken" }
          }))
      )
      const user = Option.getOrThrow(yield* users.findById(userId))
      const workspace = new Identity.Workspace({
        id: workspaceId,
        object: "workspace",
        name: input.workspaceName,
        plan: input.plan,
        status: "active",
        created_at: at,
        updated_at: at
      })
      return { user, workspace }
    })

    const register = Effect.fn("Accounts.register")(function*(input: {
      readonly email: string
      readonly password: string
      readonly name: string
      readonly workspace_name: string
    }) {
      const created = yield* createUser({
        email: input.email,
        password: input.password,
        name: input.name,
        workspaceName: input.workspace_name,
        plan: "free",
        verified: false
      })
      const token = randomToken()
      yield* users.insertVerificationToken(
        created.user.id,
        tokenHash(token),
        yield* later(credentials.verificationSeconds)
      )
      yield* mailer.send({
        to: created.user.email,
        subject: "Verify your e-mail for Switchboard",
        text: `Welcome to Switchboard.\n\nVerify your e-mail address with this token: ${token}\n` +
          `(POST ${publicUrl}/v1/auth/verify-email {"token": "..."})\n`
      })
      return created
    })

    const verifyEmail = Effect.fn("Accounts.verifyEmail")(function*(token: string) {
      const userId = yield* users.consumeVerificationToken(tokenHash(token), yield* now)
      if (Option.isNone(userId)) {
        return yield* new Errors.ValidationError({
          message: "The verification token is invalid, used or expired",
          details: { reason: "invalid_token", issues: [{ path: ["token"], message: "Invalid, used or expired token" }] }
        })
      }
      return { user: Option.getOrThrow(yield* users.findById(userId.value)) }
    })

    const issue = Effect.fn("Accounts.issue")(function*(user: Identity.User, sessionId: string, refreshToken: string) {
      const accessToken = yield* credentials.signAccessToken(user.id, sessionId)
      const memberships = yield* users.memberships(user.id)
      return {
        access_token: accessToken,
        token_type: "Bearer" as const,
        expires_in: credentials.accessTokenSeconds,
        refresh_token: refreshToken,
        user,
        workspaces: memberships
      }
    })

    const login = Effect.fn("Accounts.login")(function*(input: { readonly email: string; readonly password: string }) {
      const found = yield* users.findByEmail(input.email)
      const ok = yield* credentials.verifyPassword(
        Option.isSome(found) ? found.value.passwordHash : null,
        input.password
      )
      if (Option.isNone(found) || !ok) {
        return yield* new Errors.InvalidCredentials({ message: "E-mail or password is wrong" })
      }
      const user = found.value.user
      if (user.status === "suspended") {
        return yield* new Errors.AccountSuspended({ message: "This account is suspended" })
      }
      if (user.email_verified_at === null) {
        return yield* new Errors.EmailNotVerified({ message: "Verify your e-mail address before signing in" })
      }
      const sessionId = yield* Ids.newId("ses")
      const refreshToken = randomToken()
      yield* sessions.create({
        sessionId,
        userId: user.id,
        refreshTokenHash: tokenHash(refreshToken),
        refreshExpiresAt: yield* later(credentials.refreshTokenSeconds),
        now: yield* now
      })
      return yield* issue(user, sessionId, refreshToken)
    })

    const refresh = Effect.fn("Accounts.refresh")(function*(refreshToken: string) {
      const next = randomToken()
      const result = yield* sessions.rotate({
        tokenHash: tokenHash(refreshToken),
        newTokenHash: tokenHash(next),
        newExpiresAt: yield* later(credentials.refreshTokenSeconds),
        now: yield* now
      })
      if (result._tag === "Reused") {
        yield* Effect.logWarning("refresh token reused: session revoked").pipe(
          Effect.annotateLogs("session_id", result.sessionId)
        )
        return yield* new Errors.Unauthorized({ message: "Refresh token already used; the session is revoked" })
      }
      if (result._tag === "Invalid") {
        return yield* new Errors.Unauthorized({ message: "Invalid or expired refresh token" })
      }
      const user = Option.getOrThrow(yield* users.findById(result.userId))
      if (user.status === "suspended") {
        return yield* new Errors.AccountSuspended({ message: "This account is suspended" })
      }
      return yield* issue(user, result.sessionId, next)
    })

    const logout = Effect.fn("Accounts.logout")(function*(sessionId: string) {
      yield* sessions.revoke(sessionId, "logout", yield* now)
    })

    const me = Effect.fn("Accounts.me")(function*(userId: string) {
      const user = Option.getOrThrow(yield* users.findById(userId))
      const memberships = yield* users.memberships(userId)
      return { user, workspaces: memberships }
    })

    const members = Effect.fn("Accounts.members")(function*(
      workspaceId: string,
      query: { readonly limit?: number | undefined; readonly after?: string | undefined }
    ) {
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      const rows = yield* users.members(workspaceId, limit, query.after)
      return Pagination.toKeyPage(
        rows.map((m) => ({ ...m, object: "workspace_member" as const })),
        limit,
        (m) => m.id
      )
    })

    return { createUser, register, verifyEmail, login, refresh, logout, me, members } as const
  }),
  dependencies: [UsersRepo.UsersRepo.Default, SessionsRepo.SessionsRepo.Default, Credentials.Default]
}) {}
