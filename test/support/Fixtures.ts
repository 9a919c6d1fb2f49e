/**
 * HTTP helpers for tests: the typed client (`api`, what `@switchboard/sdk` users get), raw
 * requests for what the typed client cannot send (malformed input), a signed-up verified user,
 * API keys.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SandboxApi } from "@switchboard/api"
import type { Messaging } from "@switchboard/domain"
import { SwitchboardClient, toSwitchboardError } from "@switchboard/sdk"
import { Mailer } from "@switchboard/service-api"
import { Context, Effect, Ref, Schema } from "effect"
import { randomBytes } from "node:crypto"

export interface Reply {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: any
  readonly text: string
}

export interface RequestOptions {
  readonly body?: unknown
  readonly rawBody?: string
  readonly token?: string
  readonly workspace?: string
  readonly headers?: Record<string, string>
}

/** Prepended to every path `request` sends (set it when the app runs under BASE_PATH). */
export class PathPrefix extends Context.Reference<PathPrefix>()("test/PathPrefix", { defaultValue: () => "" }) {}

/**
 * The typed clients made so far, per HTTP client (the app under test's) and per token, workspace
 * and path prefix: making one walks the whole contract (every endpoint's schemas), and tests ask
 * for one in loops and polls. A client holds no state of its own (docs/TESTING.md "How long it takes").
 */
const clients = new WeakMap<HttpClient.HttpClient, Map<string, SwitchboardClient.Client>>()

/** The typed client as `token` (and `workspace`), against the app under test; with no token, anonymous. */
export const api = (token?: string, workspace?: string) =>
  Effect.gen(function*() {
    const prefix = yield* PathPrefix
    const http = yield* HttpClient.HttpClient
    const key = JSON.stringify([token ?? null, workspace ?? null, prefix])
    let made = clients.get(http)
    if (made === undefined) clients.set(http, made = new Map())
    const known = made.get(key)
    if (known !== undefined) return known
    const client = yield* SwitchboardClient.make({
      apiKey: token,
      workspaceId: workspace,
      baseUrl: prefix === "" ? undefined : prefix
    })
    made.set(key, client)
    return client
  })

/** What a refused typed call answered: status, code, message and details of the error envelope. */
export interface Refusal {
  readonly status: number | undefined
  readonly code: string
  readonly message: string
  // tests read nested members (`details.issues[0].path`) and let the assertions check them
  readonly details: Readonly<Record<string, any>>
}

/** The typed error of a call that must fail (a success fails the test). */
export const refused = <A, E, R>(call: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(call), (error): Refusal => {
    const e = toSwitchboardError(error)
    return { status: e.status, code: e.code, message: e.message, details: e.details }
  })

/** Any request, answered as status + headers + parsed JSON (or text). */
export const request = (
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE",
  path: string,
  options: RequestOptions = {}
) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const prefix = yield* PathPrefix
    let req = HttpClientRequest.make(method)(`${prefix}${path}`)
    if (options.token !== undefined) req = HttpClientRequest.setHeader(req, "authorization", `Bearer ${options.token}`)
    if (options.workspace !== undefined) req = HttpClientRequest.setHeader(req, "x-workspace-id", options.workspace)
    for (const [k, v] of Object.entries(options.headers ?? {})) req = HttpClientRequest.setHeader(req, k, v)
    if (options.rawBody !== undefined) req = HttpClientRequest.bodyText(req, options.rawBody, "application/json")
    else if (options.body !== undefined) req = yield* HttpClientRequest.bodyJson(req, options.body)
    const response = yield* client.execute(req)
    const text = yield* response.text
    let body: any = undefined
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: response.status, headers: response.headers as Record<string, string>, body, text } satisfies Reply
  }).pipe(Effect.scoped, Effect.orDie)

/** The JSON body of a raw reply as `schema` decodes it (members it does not name are dropped). */
export const bodyOf = <A, I>(schema: Schema.Schema<A, I, never>, reply: Reply): A =>
  Schema.decodeUnknownSync(schema)(reply.body)

const Envelope = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    details: Schema.Record({ key: Schema.String, value: Schema.Unknown })
  })
})

/** The error envelope of a raw reply, as `refused()` gives a typed call's (not an envelope: throws). */
export const envelopeOf = (reply: Reply): Refusal => {
  const { error } = bodyOf(Envelope, reply)
  return { status: reply.status, code: error.code, message: error.message, details: error.details }
}

export const PASSWORD = "correct horse battery staple"

export const uniqueEmail = () => `user-${randomBytes(5).toString("hex")}@example.com`

/** The verification token mailed to `email`. */
export const mailedToken = (email: string) =>
  Effect.gen(function*() {
    const outbox = yield* Ref.get(yield* Mailer.MailOutbox)
    const mail = [...outbox].reverse().find((m) => m.to === email)
    const token = mail && /token: (\S+)/.exec(mail.text)?.[1]
    if (!token) return yield* Effect.dieMessage(`no verification mail for ${email}`)
    return token
  })

export interface SignedUp {
  readonly email: string
  readonly userId: string
  readonly workspaceId: string
  readonly accessToken: string
  readonly refreshToken: string
}

const Registered = Schema.Struct({ workspace: Schema.Struct({ id: Schema.String }) })
const LoggedIn = Schema.Struct({
  user: Schema.Struct({ id: Schema.String }),
  access_token: Schema.String,
  refresh_token: Schema.String
})

/** Registers, verifies the e-mail and logs in. */
export const signUp = (email = uniqueEmail()) =>
  Effect.gen(function*() {
    const registered = yield* request("POST", "/v1/auth/register", {
      body: { email, password: PASSWORD, name: "Test User", workspace_name: "Test Workspace" }
    })
    if (registered.status !== 201) return yield* Effect.dieMessage(`register: ${registered.status} ${registered.text}`)
    const token = yield* mailedToken(email)
    const verified = yield* request("POST", "/v1/auth/verify-email", { body: { token } })
    if (verified.status !== 200) return yield* Effect.dieMessage(`verify: ${verified.status} ${verified.text}`)
    const login = yield* request("POST", "/v1/auth/login", { body: { email, password: PASSWORD } })
    if (login.status !== 200) return yield* Effect.dieMessage(`login: ${login.status} ${login.text}`)
    const session = bodyOf(LoggedIn, login)
    return {
      email,
      userId: session.user.id,
      workspaceId: bodyOf(Registered, registered).workspace.id,
      accessToken: session.access_token,
      refreshToken: session.refresh_token
    } satisfies SignedUp
  })

/** Creates an API key as `user`; returns the whole creation response (with `secret`). */
export const createKey = (
  user: SignedUp,
  body: { readonly mode?: "test" | "live"; readonly scopes?: ReadonlyArray<string>; readonly name?: string } = {}
) =>
  Effect.gen(function*() {
    const reply = yield* request("POST", "/v1/api-keys", {
      token: user.accessToken,
      workspace: user.workspaceId,
      body: {
        name: body.name ?? "test key",
        mode: body.mode ?? "test",
        ...(body.scopes ? { scopes: body.scopes } : {})
      }
    })
    if (reply.status !== 201) return yield* Effect.dieMessage(`create key: ${reply.status} ${reply.text}`)
    return reply.body as { id: `key_${string}`; secret: string; scopes: Array<string> }
  })

/** A test-mode key and a sandbox session whose code verified `recipients`. */
export const sandboxSetup = (recipients: ReadonlyArray<string> = ["+4915112345678"]) =>
  Effect.gen(function*() {
    const user = yield* signUp()
    const key = yield* createKey(user, { mode: "test" })
    const session = yield* request("POST", "/v1/sandbox/sessions", { token: key.secret })
    if (session.status !== 201) return yield* Effect.dieMessage(`sandbox session: ${session.status} ${session.text}`)
    const created = bodyOf(Schema.Struct(SandboxApi.CreatedSandboxSession.fields), session)
    for (const phone of recipients) {
      const verified = yield* request("POST", `/v1/sandbox/sessions/${created.id}/verify`, {
        token: key.secret,
        body: { phone_number: phone, code: created.verification.code }
      })
      if (verified.status !== 200) return yield* Effect.dieMessage(`verify: ${verified.status} ${verified.text}`)
    }
    return { user, key: key.secret, session: created }
  })

/** Polls `GET /v1/messages/{id}` (typed client) until `done(message)` or `timeoutMs`. */
export const waitForMessage = (
  token: string,
  id: string,
  done: (message: Messaging.MessageWithTimeline) => boolean,
  timeoutMs = 20_000
) =>
  Effect.gen(function*() {
    const client = yield* api(token)
    const deadline = Date.now() + timeoutMs
    let last: Messaging.MessageWithTimeline | undefined
    while (Date.now() < deadline) {
      last = yield* client.messages.get({ path: { messageId: id as `msg_${string}` } }).pipe(Effect.orDie)
      if (done(last)) return last
      yield* Effect.sleep("100 millis")
    }
    return yield* Effect.dieMessage(`message ${id} never reached the expected state (last: ${last?.status})`)
  })

/** Repeats `effect` until `done(result)` or `timeoutMs`; the last result either way. */
export const eventually = <A, E, R>(effect: Effect.Effect<A, E, R>, done: (a: A) => boolean, timeoutMs = 20_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    let last = yield* effect
    while (!done(last) && Date.now() < deadline) {
      yield* Effect.sleep("100 millis")
      last = yield* effect
    }
    return last
  })
