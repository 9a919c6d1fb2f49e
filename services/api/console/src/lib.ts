/**
 * What every part of the console shares (docs/CONSOLE.md "Console"): the typed client of the API
 * (`@switchboard/sdk`, derived from the contract the server implements, so a contract change
 * breaks this build), the in-memory access token and its refresh, small DOM helpers, status
 * badges, notices, and the test-mode key the page keeps for sandbox work.
 */
import { HttpApi } from "@effect/platform"
import { Api } from "@switchboard/api"
import type { PromiseClient } from "@switchboard/sdk"
import { createClient, SwitchboardError } from "@switchboard/sdk"

export const base = document.querySelector<HTMLMetaElement>("meta[name=\"switchboard-base\"]")!.content
/** The element with `id` (the page's own markup: index.html holds every id asked for). */
export const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T

// ---- the contract's shapes, as the typed client answers them ---------------------------------

type Endpoint<G extends keyof PromiseClient, E extends keyof PromiseClient[G]> = PromiseClient[G][E]
/** What `client.<group>.<endpoint>` resolves with. */
export type Answer<G extends keyof PromiseClient, E extends keyof PromiseClient[G]> = Endpoint<G, E> extends
  (...args: ReadonlyArray<never>) => Promise<infer A> ? A : never
/** What `client.<group>.<endpoint>` takes. */
export type Request<G extends keyof PromiseClient, E extends keyof PromiseClient[G]> = Endpoint<G, E> extends
  (request: infer R) => Promise<unknown> ? R : never

export type Channel = Answer<"channels", "get">
export type ChannelId = Channel["id"]
export type Message = Answer<"messages", "list">["data"][number]
export type MessageWithTimeline = Answer<"messages", "get">
export type Conversation = Answer<"conversations", "get">
export type ConversationListed = Answer<"conversations", "list">["data"][number]
export type GroupChat = Answer<"groupChats", "get">
export type Member = Answer<"session", "members">["data"][number]
export type User = Answer<"session", "me">["user"]

/**
 * `token`: the user's access token (memory only). `testKey`: a test-mode API key this page
 * created for sandbox sessions and sends on sandbox channels (memory only, gone on reload).
 */
export interface State {
  token: string | null
  workspace: string | null
  channels: Array<Channel>
  view: string
  pollTimer: ReturnType<typeof setTimeout> | undefined
  testKey: { readonly secret: string; readonly id: string; readonly workspace: string | null } | null
}
export const state: State = {
  token: null,
  workspace: null,
  channels: [],
  view: "channels",
  pollTimer: undefined,
  testKey: null
}

// ---- HTTP ----------------------------------------------------------------------------------

/** The API as the page's origin serves it (under `BASE_PATH` when one is set). */
export const apiBase = `${location.origin}${base}`

/** The user's credentials: the access token and the workspace chosen. */
export const userHeaders = (): Record<string, string> => {
  const h: Record<string, string> = {}
  if (state.token) h.authorization = `Bearer ${state.token}`
  if (state.workspace) h["x-workspace-id"] = state.workspace
  return h
}

const withHeaders = (init: RequestInit | undefined, extra: Record<string, string>): RequestInit => {
  const headers = new Headers(init?.headers)
  for (const [name, value] of Object.entries(extra)) headers.set(name, value)
  return { ...init, headers, credentials: "same-origin" }
}

let onSignedOut = (_message: string) => {}
/** What a 401 that a refresh cannot cure does (the page shows sign-in again). */
export const whenSignedOut = (f: (message: string) => void) => {
  onSignedOut = f
}

/**
 * `fetch` as the signed-in user: a 401 refreshes the access token once (the refresh cookie) and
 * sends again; a 401 that a refresh cannot cure signs the page out.
 */
export const userFetch: typeof fetch = async (input, init) => {
  const send = () => fetch(input, withHeaders(init, userHeaders()))
  let r = await send()
  if (r.status === 401 && state.token && (await refresh())) r = await send()
  if (r.status === 401) onSignedOut("Your session ended. Sign in again.")
  return r
}

/** `fetch` with the page's test-mode key (sandbox routes, sends on sandbox channels). */
const testKeyFetch: typeof fetch = (input, init) =>
  fetch(input, withHeaders(init, state.testKey ? { authorization: `Bearer ${state.testKey.secret}` } : {}))

/** A typed client with how it authenticates (`fetch`, for the calls the client does not make: uploads). */
export interface Caller {
  readonly client: PromiseClient
  readonly fetch: typeof fetch
}

/** The API as nobody in particular: sign-in and refresh (the refresh cookie authenticates). */
export const anonymous = createClient({ baseUrl: apiBase })
/** The API as the signed-in user in the chosen workspace. */
export const user: Caller = { client: createClient({ baseUrl: apiBase, fetch: userFetch }), fetch: userFetch }
/** The API with the page's test-mode key (make it first with `testKey()`). */
export const sandbox: Caller = {
  client: createClient({ baseUrl: apiBase, fetch: testKeyFetch }),
  fetch: testKeyFetch
}
export const api = user.client

/** A new access token from the refresh cookie; false when there is no session to refresh. */
export async function refresh(): Promise<boolean> {
  try {
    state.token = (await anonymous.auth.refresh({})).access_token
    return true
  } catch {
    return false
  }
}

/** `group.endpoint` -> its path in the contract (`/v1/channels/:channelId/qr/stream`). */
const PATHS = (() => {
  const paths = new Map<string, string>()
  HttpApi.reflect(Api.Api, {
    onGroup() {},
    onEndpoint({ endpoint, group }) {
      paths.set(`${group.identifier}.${endpoint.name}`, endpoint.path)
    }
  })
  return paths
})()

/**
 * The URL of an endpoint the typed client cannot read (a stream of events, a file's bytes), from
 * the contract: `pathOf("qrPairing", "stream", { channelId })`.
 */
export const pathOf = <G extends keyof PromiseClient, E extends keyof PromiseClient[G] & string>(
  group: G,
  endpoint: E,
  path: Request<G, E> extends { readonly path: infer P } ? P : never
): string => {
  const template = PATHS.get(`${group}.${endpoint}`)
  if (template === undefined) throw new Error(`${group}.${endpoint} is not in the contract`)
  const values = path as Readonly<Record<string, unknown>>
  return base + template.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(String(values[name])))
}

/** Whether the server's `signed_in` hint is here: a refresh cookie was set for this console. */
export const hasSessionHint = () => document.cookie.split(";").some((c) => c.trim() === "signed_in=1")

/** Drops the hint once a refresh is refused (the cookie it stood for is gone or revoked). */
export const forgetSessionHint = () => {
  document.cookie = `signed_in=; Max-Age=0; Path=${base}/console; Secure; SameSite=Strict`
}

/**
 * The test-mode key for sandbox work: created on first need ("Console sandbox", every scope but
 * webhooks) and kept in this page's memory only; listed under API keys like any other.
 */
export async function testKey(): Promise<string> {
  if (state.testKey && state.testKey.workspace === state.workspace) return state.testKey.secret
  const created = await api.apiKeys.create({ payload: { name: "Console sandbox", mode: "test" } })
  state.testKey = { secret: created.secret, id: created.id, workspace: state.workspace }
  return created.secret
}

/** Sends on a sandbox channel need the test key; every other channel takes the user session. */
export const callerFor = async (channelId: ChannelId): Promise<Caller> => {
  const channel = state.channels.find((c) => c.id === channelId) ??
    (await api.channels.get({ path: { channelId } }))
  if (channel.provider !== "sandbox") return user
  await testKey()
  return sandbox
}

// ---- DOM -----------------------------------------------------------------------------------

export type Child = Node | string
export type Attributes = Record<string, string | ((event: Event) => void)>

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attributes = {},
  ...children: ReadonlyArray<Child>
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === "function") node.addEventListener(k === "onclick" ? "click" : k, v)
    else if (k === "text") node.textContent = v
    else node.setAttribute(k, v)
  }
  for (const c of children) node.append(c)
  return node
}

const STATUS_LOOK: Record<string, readonly [string, string]> = {
  connected: ["s-ok", "✓"],
  read: ["s-ok", "✓✓"],
  delivered: ["s-ok", "✓✓"],
  sent: ["s-ok", "✓"],
  succeeded: ["s-ok", "✓"],
  active: ["s-ok", "✓"],
  open: ["s-ok", "●"],
  completed: ["s-ok", "✓"],
  pending: ["s-wait", "…"],
  connecting: ["s-wait", "…"],
  qr_pending: ["s-wait", "▣"],
  queued: ["s-wait", "…"],
  sending: ["s-wait", "…"],
  dispatching: ["s-wait", "…"],
  delivering: ["s-wait", "…"],
  degraded: ["s-wait", "!"],
  paused: ["s-wait", "Ⅱ"],
  running: ["s-wait", "…"],
  failed: ["s-bad", "✕"],
  dead: ["s-bad", "✕"],
  disconnected: ["s-bad", "✕"],
  logged_out: ["s-bad", "✕"],
  suspended: ["s-bad", "⛔"],
  disabled: ["s-bad", "⛔"],
  archived: ["s-off", "–"],
  received: ["s-ok", "↓"],
  closed: ["s-off", "–"],
  revoked: ["s-off", "–"],
  expired: ["s-off", "–"]
}

/** A status as text with an icon: the colour is never the only signal. */
export function badge(status: string) {
  const [cls, icon] = STATUS_LOOK[status] ?? ["s-off", "•"]
  return el("span", {
    class: `badge ${cls}`,
    "data-icon": icon,
    "data-status": status,
    text: status.replace(/_/g, " ")
  })
}

export const cell = (label: string, ...children: ReadonlyArray<Child>) => el("td", { "data-label": label }, ...children)
export const when = (ts: string | null | undefined) => (ts ? new Date(ts).toLocaleString() : "")

/** A time in a list: the hour today, else the day (the full time is `when`). */
export function shortWhen(ts: string | null | undefined, now = new Date()) {
  if (!ts) return ""
  const d = new Date(ts)
  return d.toDateString() === now.toDateString()
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleDateString([], {
      day: "numeric",
      month: "short",
      ...(d.getFullYear() === now.getFullYear() ? {} : { year: "numeric" })
    })
}

/**
 * A message's content as one line, by its `type`: the text when there is one (text, template,
 * and any kind with a caption), otherwise the kind's name in brackets, so kinds this page does
 * not know yet (image, location, reaction, ...) still show as something readable.
 */
export function messageText(m: { readonly type?: unknown; readonly text?: { readonly body?: unknown } | null }) {
  if (typeof m.text?.body === "string") return m.text.body
  const type = typeof m.type === "string" ? m.type : "message"
  return `[${type.replace(/_/g, " ")}]`
}

export function notice(message: string | null) {
  const n = $("notice")
  n.textContent = message ?? ""
  n.hidden = !message
}

/** An issue of a refusal: where in the request, and why (never the value sent). */
interface Issue {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}
const firstIssue = (details: Readonly<Record<string, unknown>>): Issue | undefined => {
  const issues = details.issues
  return Array.isArray(issues) ? (issues[0] as Issue | undefined) : undefined
}

/** A failed call in the server's words (a request the client refused before sending, likewise). */
export function explain(err: unknown): string {
  if (!(err instanceof SwitchboardError) || err.status === undefined) {
    return "The server could not be reached. Check the connection and try again."
  }
  if (err.code === "QR_SAFETY_LIMIT_REACHED") {
    return "This number reached its daily safety limit; sending resumes later."
  }
  const limit = err.details.limit_bytes
  if (typeof limit === "number") {
    return `${err.message} (the limit is ${
      limit >= 1048576 ? `${+(limit / 1048576).toFixed(1)} MiB` : `${Math.round(limit / 1024)} KiB`
    })`
  }
  const issue = firstIssue(err.details)
  // refused before sending (`details.sent: false`): said as the server says it
  const message = err.details.sent === false ? "Request validation failed" : err.message
  if (issue) return `${message}: ${issue.path.join(".")}: ${issue.message}`
  const reason = err.details.reason
  if (reason) return `${message} (${String(reason).replace(/_/g, " ")})`
  return message
}

/** Whether a call failed because the server refused it with `code`. */
export const refusedWith = (err: unknown, code: string) => err instanceof SwitchboardError && err.code === code

/** Whether a call got no answer at all (the connection failed or was cut). */
export const unanswered = (err: unknown) => err instanceof SwitchboardError && err.status === undefined

/** A form's error line next to it (role=alert), or `null` to clear it. */
export function formError(id: string, err: unknown) {
  const p = $(id)
  p.textContent = err ? explain(err) : ""
  p.hidden = !err
}

export function confirmDialog(text: string, okLabel: string): Promise<boolean> {
  const dialog = $<HTMLDialogElement>("confirm")
  $("confirm-text").textContent = text
  $("confirm-ok").textContent = okLabel
  dialog.returnValue = ""
  dialog.showModal()
  return new Promise((resolve) =>
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true })
  )
}

/** A secret shown once: the text, a copy button, and a line that says it will not be shown again. */
export function secretBox(label: string, secret: string) {
  const code = el("code", { class: "secret", text: secret })
  const copied = el("span", { class: "muted", role: "status", "aria-live": "polite" })
  const copy = el("button", {
    type: "button",
    text: `Copy ${label}`,
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(secret)
        copied.textContent = "Copied."
      } catch {
        // no clipboard permission: select the text so Ctrl+C copies it
        getSelection()?.selectAllChildren(code)
        copied.textContent = "Selected: press Ctrl+C (⌘C) to copy."
      }
    }
  })
  return el(
    "div",
    { class: "secret-box", role: "group", "aria-label": label },
    el("p", { text: `Your ${label}. Copy it now: it is shown only once.` }),
    code,
    el("div", { class: "row" }, copy, copied)
  )
}

// ---- views and live updates ------------------------------------------------------------------

/** view name -> loader; app.ts shows one at a time. */
export const views = new Map<string, () => Promise<void>>()

export function stopPolling() {
  clearTimeout(state.pollTimer)
  state.pollTimer = undefined
}

/** Runs `f` again after `ms` while `view` is showing and someone is signed in. */
export function pollAgain(view: string, f: () => unknown, ms: number) {
  stopPolling()
  if (state.view === view && state.token) state.pollTimer = setTimeout(f, ms)
}

/** A refusal read from a raw answer's error envelope (`{"error": {code, message, details}}`). */
export const errorOf = (status: number, body: unknown): SwitchboardError => {
  const error = typeof body === "object" && body !== null && "error" in body ? body.error : null
  const member = (name: string) =>
    typeof error === "object" && error !== null && name in error ? (error as Record<string, unknown>)[name] : undefined
  const details = member("details")
  return new SwitchboardError(
    String(member("code") ?? "UNEXPECTED_RESPONSE"),
    String(member("message") ?? `HTTP ${status}`),
    status,
    typeof details === "object" && details !== null ? details as Record<string, unknown> : {}
  )
}
