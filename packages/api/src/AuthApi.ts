/** Registration, e-mail verification and sessions. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, OpenApi } from "@effect/platform"
import { Characters, Errors, Identity, Schemas } from "@switchboard/domain"
import { Schema } from "effect"
import { rateLimited } from "./Security.js"

/** Per-IP rate limiting of the public routes (login, register, ...). */
export class IpRateLimit extends HttpApiMiddleware.Tag<IpRateLimit>()("@switchboard/api/IpRateLimit", {
  failure: Errors.RateLimited
}) {}

const Email = Schema.String.pipe(
  Schema.trimmed({ message: () => "Expected an e-mail address without surrounding spaces" }),
  Schema.pattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: () => "Expected an e-mail address" }),
  Characters.maxCharacters(254, "Expected at most 254 characters")
)

const Password = Schema.String.pipe(
  Characters.minCharacters(12, "Expected a password of at least 12 characters"),
  Characters.maxCharacters(128, "Expected a password of at most 128 characters")
)

export const RegisterRequest = Schemas.StrictStruct({
  email: Email,
  password: Password,
  name: Schema.String.pipe(Characters.minCharacters(1), Characters.maxCharacters(100)),
  workspace_name: Schema.String.pipe(Characters.minCharacters(1), Characters.maxCharacters(100))
}).annotations({ identifier: "RegisterRequest" })

/** Body of `POST /v1/auth/refresh`; optional (the cookie is the alternative). */
export const RefreshRequest = Schemas.StrictStruct({
  refresh_token: Schema.optional(Schema.String.pipe(Characters.maxCharacters(200)))
}).annotations({ identifier: "RefreshRequest" })

export const LoginRequest = Schemas.StrictStruct({
  email: Schema.String.pipe(Characters.maxCharacters(254)),
  password: Schema.String.pipe(Characters.maxCharacters(128))
}).annotations({ identifier: "LoginRequest" })

export class Session extends Schema.Class<Session>("Session")({
  access_token: Schema.String,
  token_type: Schema.Literal("Bearer"),
  expires_in: Schema.Number.annotations({ description: "Seconds until the access token expires" }),
  refresh_token: Schema.String,
  user: Identity.User,
  workspaces: Schema.Array(Identity.WorkspaceMembership)
}) {}

export class Me extends Schema.Class<Me>("Me")({
  user: Identity.User,
  workspaces: Schema.Array(Identity.WorkspaceMembership)
}) {}

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("register", "/v1/auth/register")
      .setPayload(RegisterRequest)
      .addSuccess(Schema.Struct({ user: Identity.User, workspace: Identity.Workspace }), { status: 201 })
      .addError(Errors.Conflict)
      .addError(Errors.ServiceUnavailable)
      .annotate(
        OpenApi.Description,
        "Creates an unverified user and a workspace on plan `free` owned by them, and e-mails a verification link. Duplicate e-mail: 409 CONFLICT. Limited like login."
      )
      .pipe(rateLimited("register"))
  )
  .add(
    HttpApiEndpoint.post("verifyEmail", "/v1/auth/verify-email")
      .setPayload(Schemas.StrictStruct({ token: Schema.String.pipe(Characters.maxCharacters(200)) }))
      .addSuccess(Schema.Struct({ user: Identity.User }))
      .annotate(
        OpenApi.Description,
        "Verifies an e-mail address. A bad, used or expired token: 422 with `details.reason = invalid_token`."
      )
      .pipe(rateLimited("register"))
  )
  .add(
    HttpApiEndpoint.post("login", "/v1/auth/login")
      .setPayload(LoginRequest)
      .addSuccess(Session)
      .addError(Errors.InvalidCredentials)
      .addError(Errors.EmailNotVerified)
      .addError(Errors.AccountSuspended)
      .addError(Errors.ServiceUnavailable)
      .annotate(
        OpenApi.Description,
        "Returns an access token (JWT, 15 minutes) and a refresh token, and sets the same refresh token as an httpOnly cookie (`Path=<prefix>/v1/auth`). 20 attempts per 15 minutes per IP."
      )
      .pipe(rateLimited("login"))
  )
  .add(
    HttpApiEndpoint.post("refresh", "/v1/auth/refresh")
      .addSuccess(Session)
      .addError(Errors.Unauthorized)
      .addError(Errors.AccountSuspended)
      .addError(Errors.ValidationError)
      .annotate(OpenApi.Override, {
        requestBody: {
          required: false,
          content: {
            "application/json": {
              schema: { type: "object", properties: { refresh_token: { type: "string" } }, additionalProperties: false }
            }
          }
        }
      })
      .annotate(
        OpenApi.Description,
        "Exchanges a refresh token (JSON body `{\"refresh_token\": \"...\"}`, or with no body the `refresh_token` cookie) for a new pair; the old refresh token stops working (rotation). Presenting an already-rotated token revokes the whole session: 401. 120 refreshes per 15 minutes per IP, counted apart from logins (failed logins never block a refresh)."
      )
      .pipe(rateLimited("refresh"))
  )
  .middleware(IpRateLimit)
  .annotate(OpenApi.Title, "Auth")
{}
