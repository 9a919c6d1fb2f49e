/**
 * A workspace with verified sandbox channels and a webhook endpoint for every event, set up over
 * HTTP against a running stack (api node + runners), for end-to-end tests that send traffic.
 */
import { assert } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { admin, call } from "./Processes.js"

export const RECIPIENT = "+4915112345678"

/** `SANDBOX_NUMBERS` for a stack that serves `channels` sandbox channels at once. */
export const sandboxNumbers = (channels: number) =>
  Array.from({ length: channels }, (_, i) => `+1555041${String(i).padStart(4, "0")}`).join(",")

export interface LoadWorkspace {
  /** a test-mode API key that sends */
  readonly token: string
  readonly channels: ReadonlyArray<string>
}

export const loadWorkspace = async (
  api: string,
  databaseUrl: string,
  channels: number,
  /** every event of the workspace is posted there */
  webhookUrl: string
): Promise<LoadWorkspace> => {
  const email = `load-${randomBytes(4).toString("hex")}@example.com`
  const password = "correct horse battery staple"
  const env = { DATABASE_URL: databaseUrl }
  const created = await admin(
    ["create-user", "--email", email, "--password", password, "--name", "L", "--workspace", "L", "--verified"],
    env
  )
  await admin(
    // the whole pool: an operator's number is honoured as given (unlimited is half the pool)
    [
      "override",
      "--workspace",
      created.workspace_id,
      "--entitlement",
      "shared_test_sessions",
      "--value",
      String(channels)
    ],
    env
  )
  const login = await call(api, "POST", "/v1/auth/login", { body: { email, password } })
  const key = await call(api, "POST", "/v1/api-keys", {
    token: login.body.access_token,
    workspace: created.workspace_id,
    body: { name: "load", mode: "test" }
  })
  const token = key.body.secret as string
  const hookKey = await call(api, "POST", "/v1/api-keys", {
    token: login.body.access_token,
    workspace: created.workspace_id,
    body: { name: "hooks", mode: "test", scopes: ["webhooks.manage"] }
  })
  const hook = await call(api, "POST", "/v1/webhook-endpoints", {
    token: hookKey.body.secret,
    body: { url: webhookUrl, event_types: ["*"] }
  })
  assert.strictEqual(hook.status, 201, hook.text)
  const ids: Array<string> = []
  for (let i = 0; i < channels; i++) {
    const session = await call(api, "POST", "/v1/sandbox/sessions", { token })
    assert.strictEqual(session.status, 201, session.text)
    const verified = await call(api, "POST", `/v1/sandbox/sessions/${session.body.id}/verify`, {
      token,
      body: { phone_number: RECIPIENT, code: session.body.verification.code }
    })
    assert.strictEqual(verified.status, 200, verified.text)
    ids.push(session.body.channel_id)
  }
  return { token, channels: ids }
}

/** One send on `channel_id`; its message id. */
export const send = async (api: string, token: string, channel_id: string, body: string) => {
  const sent = await call(api, "POST", "/v1/messages", { token, body: { to: RECIPIENT, channel_id, text: { body } } })
  assert.strictEqual(sent.status, 201, sent.text)
  return sent.body.id as string
}
