// What every part of the console shares (docs/CONSOLE.md "Console"): the API call with the in-memory
// access token, small DOM helpers, status badges, notices, and the test-mode key the page keeps
// for sandbox work. No build step: an ES module served from our origin.

export const base = document.querySelector('meta[name="switchboard-base"]').content
export const $ = (id) => document.getElementById(id)

/**
 * `token`: the user's access token (memory only). `testKey`: a test-mode API key this page
 * created for sandbox sessions and sends on sandbox channels (memory only, gone on reload).
 */
export const state = {
  token: null,
  workspace: null,
  channels: [],
  pairing: null,
  view: "channels",
  pollTimer: null,
  testKey: null
}

// ---- HTTP ----------------------------------------------------------------------------------

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`)
    this.status = status
    this.code = body?.error?.code ?? null
    this.details = body?.error?.details ?? {}
  }
}

export const headersFor = (json, key = null) => {
  const h = {}
  if (key) h.authorization = `Bearer ${key}`
  else {
    if (state.token) h.authorization = `Bearer ${state.token}`
    if (state.workspace) h["x-workspace-id"] = state.workspace
  }
  if (json) h["content-type"] = "application/json"
  return h
}

/** Whether the server's `signed_in` hint is here: a refresh cookie was set for this console. */
export const hasSessionHint = () => document.cookie.split(";").some((c) => c.trim() === "signed_in=1")

/** Drops the hint once a refresh is refused (the cookie it stood for is gone or revoked). */
export const forgetSessionHint = () => {
  document.cookie = `signed_in=; Max-Age=0; Path=${base}/console; Secure; SameSite=Strict`
}

export async function refresh() {
  const r = await fetch(`${base}/v1/auth/refresh`, { method: "POST", credentials: "same-origin" })
  if (!r.ok) return false
  state.token = (await r.json()).access_token
  return true
}

let onSignedOut = () => {}
/** What a 401 that a refresh cannot cure does (the page shows sign-in again). */
export const whenSignedOut = (f) => { onSignedOut = f }

/**
 * A call as the signed-in user, or with `options.key` (an API key: the sandbox's test key);
 * `options.raw` sends a file as is (`{file, type}`: POST /v1/media) instead of JSON.
 */
export async function api(method, path, body, options = {}) {
  const headers = headersFor(body !== undefined, options.key ?? null)
  if (options.raw) headers["content-type"] = options.raw.type
  const r = await fetch(`${base}${path}`, {
    method,
    credentials: "same-origin",
    headers,
    body: options.raw ? options.raw.file : body === undefined ? undefined : JSON.stringify(body)
  })
  if (r.status === 401 && !options.key && !options.retried && state.token && (await refresh())) {
    return api(method, path, body, { ...options, retried: true })
  }
  const text = await r.text()
  const parsed = text === "" ? null : JSON.parse(text)
  if (!r.ok) {
    if (r.status === 401 && !options.key) onSignedOut("Your session ended. Sign in again.")
    throw new ApiError(r.status, parsed)
  }
  return parsed
}

/**
 * The test-mode key for sandbox work: created on first need ("Console sandbox", every scope but
 * webhooks) and kept in this page's memory only; listed under API keys like any other.
 */
export async function testKey() {
  if (state.testKey?.workspace === state.workspace) return state.testKey.secret
  const created = await api("POST", "/v1/api-keys", { name: "Console sandbox", mode: "test" })
  state.testKey = { secret: created.secret, id: created.id, workspace: state.workspace }
  return created.secret
}

/** Sends on a sandbox channel need the test key; every other channel takes the user session. */
export const keyFor = async (channelId) => {
  const channel = state.channels.find((c) => c.id === channelId) ?? (await api("GET", `/v1/channels/${channelId}`))
  return channel.provider === "sandbox" ? { key: await testKey() } : {}
}

// ---- DOM -----------------------------------------------------------------------------------

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") node.addEventListener("click", v)
    else if (k === "text") node.textContent = v
    else node.setAttribute(k, v)
  }
  for (const c of children) node.append(c)
  return node
}

const STATUS_LOOK = {
  connected: ["s-ok", "✓"], read: ["s-ok", "✓✓"], delivered: ["s-ok", "✓✓"], sent: ["s-ok", "✓"],
  succeeded: ["s-ok", "✓"], active: ["s-ok", "✓"], open: ["s-ok", "●"], completed: ["s-ok", "✓"],
  pending: ["s-wait", "…"], connecting: ["s-wait", "…"], qr_pending: ["s-wait", "▣"], queued: ["s-wait", "…"],
  sending: ["s-wait", "…"], dispatching: ["s-wait", "…"], delivering: ["s-wait", "…"], degraded: ["s-wait", "!"], paused: ["s-wait", "Ⅱ"],
  running: ["s-wait", "…"],
  failed: ["s-bad", "✕"], dead: ["s-bad", "✕"], disconnected: ["s-bad", "✕"], logged_out: ["s-bad", "✕"],
  suspended: ["s-bad", "⛔"], disabled: ["s-bad", "⛔"], archived: ["s-off", "–"], received: ["s-ok", "↓"],
  closed: ["s-off", "–"], revoked: ["s-off", "–"], expired: ["s-off", "–"]
}

/** A status as text with an icon: the colour is never the only signal. */
export function badge(status) {
  const [cls, icon] = STATUS_LOOK[status] ?? ["s-off", "•"]
  return el("span", { class: `badge ${cls}`, "data-icon": icon, "data-status": status, text: status.replace(/_/g, " ") })
}

export const cell = (label, ...children) => el("td", { "data-label": label }, ...children)
export const when = (ts) => (ts ? new Date(ts).toLocaleString() : "")

/** A time in a list: the hour today, else the day (the full time is `when`). */
export function shortWhen(ts, now = new Date()) {
  if (!ts) return ""
  const d = new Date(ts)
  return d.toDateString() === now.toDateString()
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleDateString([], { day: "numeric", month: "short", ...(d.getFullYear() === now.getFullYear() ? {} : { year: "numeric" }) })
}

/**
 * A message's content as one line, by its `type`: the text when there is one (text, template,
 * and any kind with a caption), otherwise the kind's name in brackets, so kinds this page does
 * not know yet (image, location, reaction, ...) still show as something readable.
 */
export function messageText(m) {
  if (typeof m.text?.body === "string") return m.text.body
  const type = typeof m.type === "string" ? m.type : "message"
  return `[${type.replace(/_/g, " ")}]`
}

export function notice(message) {
  const n = $("notice")
  n.textContent = message ?? ""
  n.hidden = !message
}

export function explain(err) {
  if (!(err instanceof ApiError)) return "The server could not be reached. Check the connection and try again."
  const reason = err.details?.reason
  if (err.code === "QR_SAFETY_LIMIT_REACHED") return "This number reached its daily safety limit; sending resumes later."
  const limit = err.details?.limit_bytes
  if (typeof limit === "number") return `${err.message} (the limit is ${limit >= 1048576 ? `${+(limit / 1048576).toFixed(1)} MiB` : `${Math.round(limit / 1024)} KiB`})`
  const issue = err.details?.issues?.[0]
  if (issue) return `${err.message}: ${issue.path.join(".")}: ${issue.message}`
  if (reason) return `${err.message} (${String(reason).replace(/_/g, " ")})`
  return err.message
}

/** A form's error line next to it (role=alert), or `null` to clear it. */
export function formError(id, err) {
  const p = $(id)
  p.textContent = err ? explain(err) : ""
  p.hidden = !err
}

export function confirmDialog(text, okLabel) {
  const dialog = $("confirm")
  $("confirm-text").textContent = text
  $("confirm-ok").textContent = okLabel
  dialog.returnValue = ""
  dialog.showModal()
  return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true }))
}

/** A secret shown once: the text, a copy button, and a line that says it will not be shown again. */
export function secretBox(label, secret) {
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
        getSelection().selectAllChildren(code)
        copied.textContent = "Selected: press Ctrl+C (⌘C) to copy."
      }
    }
  })
  return el("div", { class: "secret-box", role: "group", "aria-label": label },
    el("p", { text: `Your ${label}. Copy it now: it is shown only once.` }), code, el("div", { class: "row" }, copy, copied))
}

// ---- views and live updates ------------------------------------------------------------------

/** view name -> loader; app.js shows one at a time. */
export const views = new Map()

export function stopPolling() {
  clearTimeout(state.pollTimer)
  state.pollTimer = null
}

/** Runs `f` again after `ms` while `view` is showing and someone is signed in. */
export function pollAgain(view, f, ms) {
  stopPolling()
  if (state.view === view && state.token) state.pollTimer = setTimeout(f, ms)
}
