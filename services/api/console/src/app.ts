/**
 * Switchboard console (docs/CONSOLE.md "Console"): sign-in, navigation, channels, pairing,
 * messages and webhooks, each a short section below. The access token lives in memory only; the
 * refresh token is the httpOnly cookie the login sets, so a reload signs in again through
 * `POST /v1/auth/refresh`. Shared helpers and the typed client are in lib.ts; API keys and the
 * sandbox in developers.ts, the inbox in inbox.ts, contacts and templates in directory.ts.
 * Bundled by `npm run build` (scripts/build-console.ts).
 */
import qrcode from "qrcode-generator"
import "./developers.js"
import "./directory.js"
import { healthPanel } from "./health.js"
import "./inbox.js"
import type { Answer, Channel, Request } from "./lib.js"
import {
  $,
  anonymous,
  api,
  badge,
  callerFor,
  cell,
  confirmDialog,
  el,
  errorOf,
  explain,
  forgetSessionHint,
  formError,
  hasSessionHint,
  notice,
  pathOf,
  pollAgain,
  refresh,
  secretBox,
  state,
  stopPolling,
  userFetch,
  views,
  when,
  whenSignedOut
} from "./lib.js"
import { forgetMedia, keyed, messageContent, summary } from "./media.js"
import { deliveryEvent, failuresInARow } from "./words.js"

const input = (id: string) => $<HTMLInputElement>(id)

// ---- session -------------------------------------------------------------------------------

async function afterSignIn() {
  const me = await api.session.me({})
  const select = $<HTMLSelectElement>("workspace")
  select.replaceChildren(...me.workspaces.map((w) => el("option", { value: w.id, text: `${w.name} (${w.role})` })))
  state.workspace = me.workspaces[0]?.id ?? null
  $("who").textContent = me.user.email
  $("signin").hidden = true
  $("app").hidden = false
  $("session").hidden = false
  notice(null)
  await show("channels")
}

function signedOut(message: string | null) {
  state.token = null
  state.workspace = null
  state.testKey = null
  forgetMedia()
  stopPairing()
  stopPolling()
  $("app").hidden = true
  $("session").hidden = true
  $("signin").hidden = false
  notice(message)
}

whenSignedOut(signedOut)

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  const error = $("signin-error")
  error.hidden = true
  try {
    const session = await anonymous.auth.login({
      payload: { email: input("email").value, password: input("password").value }
    })
    state.token = session.access_token
    input("password").value = ""
    await afterSignIn()
  } catch (err) {
    // the server's words (one wording for a wrong password, API and console alike)
    error.textContent = explain(err)
    error.hidden = false
  }
})

$("logout").addEventListener("click", async () => {
  try {
    await api.session.logout({})
  } finally {
    signedOut(null)
    $("email").focus()
  }
})

$("workspace").addEventListener("change", async (event) => {
  state.workspace = (event.target as HTMLSelectElement).value
  stopPairing()
  await show(state.view)
})

// ---- navigation ----------------------------------------------------------------------------

for (const tab of document.querySelectorAll<HTMLElement>(".tab")) {
  tab.addEventListener("click", () => show(tab.dataset.view ?? "channels"))
}

async function show(view: string) {
  state.view = view
  stopPolling()
  // an error line of the page left behind is stale on the next one
  notice(null)
  for (const tab of document.querySelectorAll<HTMLElement>(".tab")) {
    if (tab.dataset.view === view) tab.setAttribute("aria-current", "page")
    else tab.removeAttribute("aria-current")
  }
  for (const name of views.keys()) $(`view-${name}`).hidden = name !== view
  try {
    await views.get(view)?.()
  } catch (err) {
    notice(explain(err))
  }
}

views.set("channels", () => loadChannels())
views.set("messages", () => loadMessagesView())
views.set("webhooks", () => {
  // a secret shown once is gone once the page moves on
  $("endpoint-secret").hidden = true
  $("endpoint-secret").replaceChildren()
  return loadWebhooks()
})

// ---- channels ------------------------------------------------------------------------------

const rowsOf = (id: string) => $<HTMLTableElement>(id).tBodies[0]!

async function loadChannels() {
  const page = await api.channels.list({ urlParams: { limit: 100 } })
  state.channels = page.data.filter((c) => c.status !== "archived")
  rowsOf("channels").replaceChildren(...state.channels.map(channelRow))
  if (state.channels.length === 0) {
    rowsOf("channels").append(el(
      "tr",
      {},
      el("td", {
        colspan: "5",
        text:
          "No channels yet: create a QR channel above to link a phone, or open a sandbox session under \"API keys & sandbox\" to try everything without one."
      })
    ))
  }
}

function channelRow(c: Channel) {
  const actions = el("div", { class: "row" })
  if (c.provider === "qr" && c.status !== "connected") {
    actions.append(el("button", { type: "button", onclick: () => startPairing(c), text: `Link ${c.name}` }))
  }
  actions.append(
    el("button", { type: "button", onclick: () => rename(c), text: `Rename ${c.name}` }),
    el("button", { type: "button", class: "danger", onclick: () => archive(c), text: `Archive ${c.name}` })
  )
  const details = el(
    "div",
    {},
    el("span", { class: "muted", text: `${c.provider}${c.is_default ? " · default" : ""}` })
  )
  if (c.status_reason) details.append(el("div", { class: "muted", text: reasonText(c.status_reason) }))
  const caps = el("div", { class: "muted caps" })
  details.append(caps)
  if (c.status === "connected") {
    api.channels.capabilities({ path: { channelId: c.id } }).then(
      (cap) => {
        caps.textContent = `${cap.max_throughput_mps} msg/s · ${cap.message_types.join(", ")}`
      },
      () => {}
    )
  }
  if (c.provider === "qr" && c.status !== "archived") {
    // the number's health: the safety cap, the warm-up, WhatsApp's restriction signals
    details.append(healthPanel(c))
  }
  return el(
    "tr",
    { "data-channel": c.id },
    cell("Name", el("strong", { text: c.name })),
    cell("Status", badge(c.status)),
    cell("Number", c.phone_number ?? "—"),
    cell("Details", details),
    cell("Actions", actions)
  )
}

$("create-channel").addEventListener("submit", async (event) => {
  event.preventDefault()
  try {
    await api.channels.create({ payload: { provider: "qr", name: input("channel-name").value.trim() } })
    input("channel-name").value = ""
    notice(null)
    await loadChannels()
  } catch (err) {
    notice(explain(err))
  }
})

async function rename(c: Channel) {
  const name = window.prompt(`New name for ${c.name}`, c.name)
  if (name === null || name.trim() === "" || name.trim() === c.name) return
  try {
    await api.channels.update({ path: { channelId: c.id }, payload: { name: name.trim() } })
    await loadChannels()
  } catch (err) {
    notice(explain(err))
  }
}

async function archive(c: Channel) {
  if (!(await confirmDialog(`Archive ${c.name}? It stops sending and receiving; this cannot be undone.`, "Archive"))) {
    return
  }
  try {
    await api.channels.archive({ path: { channelId: c.id } })
    if (pairing?.channel.id === c.id) stopPairing()
    await loadChannels()
  } catch (err) {
    notice(explain(err))
  }
}

// ---- QR pairing ----------------------------------------------------------------------------

const REASONS: Record<string, string> = {
  link_lost: "The link to WhatsApp was lost; reconnecting.",
  reconnect_budget_exhausted:
    "WhatsApp could not be reached after several tries. Check the server's network, then link again.",
  logged_out_from_phone: "The phone removed this linked device. Link it again with a new code.",
  logged_out: "This device was logged out. Link it again with a new code.",
  connection_replaced: "Another session took over this number. Link again if this console should own it.",
  forbidden: "WhatsApp refused this number. Check the account on the phone.",
  client_outdated: "WhatsApp asks for a newer client version; the operator must update.",
  pairing_interrupted: "Pairing was interrupted. Start again with a new code.",
  qr_expired: "The code expired before it was scanned.",
  pairing_code_expired: "The code expired before it was typed on the phone.",
  phone_number_refused: "WhatsApp does not link this number. Check it (with its country code) and try again.",
  pairing_code_issued:
    "On the phone: WhatsApp, Settings, Linked devices, Link a device, Link with phone number instead, then type this code.",
  suspended: "The workspace or channel is suspended.",
  paired: "Linked.",
  qr_issued: "Scan the code.",
  pairing_started: "Starting…"
}
const reasonText = (reason: string) => REASONS[reason] ?? String(reason).replace(/_/g, " ")

/** The pairing the panel shows: its channel, its live stream, its countdown. */
interface Pairing {
  readonly channel: Channel
  stopped: boolean
  abort: AbortController | null
  countdown: ReturnType<typeof setInterval> | undefined
  attempt: number
  retry: number | null
  done: boolean
  started: boolean
  phoneNumber?: string
}
let pairing: Pairing | null = null

function stopPairing() {
  const p = pairing
  if (!p) return
  p.stopped = true
  p.abort?.abort()
  clearInterval(p.countdown)
  pairing = null
  $("pairing").hidden = true
  clearCodes()
  setPairingHint(null)
}

$("close-pairing").addEventListener("click", () => {
  stopPairing()
  loadChannels()
})
$("new-code").addEventListener("click", () => pairing && beginPairing(pairing))
// "Link with a code": WhatsApp's 8-character code for a number, typed on the phone instead of scanning
$("code-form").addEventListener("submit", (e) => {
  e.preventDefault()
  const p = pairing
  if (!p) return
  p.phoneNumber = input("code-phone").value.replace(/[\s()-]/g, "")
  beginPairing(p)
})

async function startPairing(channel: Channel) {
  stopPairing()
  const p: Pairing = {
    channel,
    stopped: false,
    abort: null,
    countdown: undefined,
    attempt: 0,
    retry: null,
    done: false,
    started: false
  }
  pairing = p
  $("pairing").hidden = false
  $("pairing-title").textContent = `Link a phone to ${channel.name}`
  await beginPairing(p)
}

async function beginPairing(p: Pairing) {
  $("new-code").hidden = true
  $("code-form").hidden = false
  p.done = false
  setPairingHint(null)
  setPairingStatus("Asking WhatsApp for a code…")
  p.started = false
  openStream(p)
  try {
    // linking with a code once a number was given, else QR codes (no body)
    const payload: Request<"qrPairing", "start">["payload"] = p.phoneNumber
      ? { method: "code", phone_number: p.phoneNumber }
      : null
    await api.qrPairing.start({ path: { channelId: p.channel.id }, payload })
    p.started = true
  } catch (err) {
    setPairingStatus(explain(err), true)
    $("new-code").hidden = false
  }
}

function setPairingStatus(text: string, bad = false) {
  const s = $("pairing-status")
  s.textContent = text
  s.className = bad ? "error" : ""
}

/** What to check, from the server, when WhatsApp cannot be reached (`null` hides it). */
function setPairingHint(text: string | null) {
  const h = $("pairing-hint")
  h.textContent = text ?? ""
  h.hidden = !text
}

/** A stream's frame, as `qr/stream` documents it (docs/QR-CHANNELS.md): read loosely, it is not decoded. */
interface ConnectionError {
  readonly message: string
  readonly next_attempt_at?: string | null
}
interface Frame {
  readonly status?: string
  readonly phone_number?: string | null
  readonly qr?: string | null
  readonly qr_expires_at?: string | null
  readonly pairing_code?: string | null
  readonly pairing_code_expires_at?: string | null
  readonly connection_error?: ConnectionError | null
  readonly reason?: string | null
  readonly to_status?: string
}

/** A `connection_error` (`qr/stream`: `snapshot`, `qr.state`): the reason as a hint; while another attempt follows, say so. */
function showConnectionError(error: ConnectionError | null | undefined) {
  if (!error) return setPairingHint(null)
  setPairingHint(error.message)
  if (error.next_attempt_at) setPairingStatus("WhatsApp cannot be reached; trying again…", true)
}

/** No code shows: neither the QR code nor the pairing code. */
function clearCodes() {
  $("qr").replaceChildren()
  $("pairing-code").textContent = ""
  $("pairing-code").hidden = true
}

/** WhatsApp's pairing code, large, in two groups of four as the phone shows its boxes. */
function drawPairingCode(code: string) {
  $("qr").replaceChildren()
  $("pairing-code").textContent = `${code.slice(0, 4)}-${code.slice(4)}`
  $("pairing-code").hidden = false
}

const TYPE_CODE = REASONS.pairing_code_issued!

function drawQr(text: string) {
  $("pairing-code").hidden = true
  const qr = qrcode(0, "M")
  qr.addData(text)
  qr.make()
  $("qr").innerHTML = qr.createSvgTag({ cellSize: 4, margin: 4, scalable: true })
  $("qr").dataset.code = String(Date.now())
}

function startCountdown(p: Pairing, expiresAt: string | null | undefined) {
  clearInterval(p.countdown)
  const tick = () => {
    const left = Math.max(0, Math.round((new Date(expiresAt ?? 0).getTime() - Date.now()) / 1000))
    $("countdown").textContent = left > 0 ? `Code valid for ${left} s` : "Code expired"
  }
  tick()
  p.countdown = setInterval(tick, 1000)
}

function onFrame(p: Pairing, event: string, data: Frame) {
  if (event === "snapshot") {
    if (data.status === "connected") return onConnected(p, data.phone_number ?? null)
    // the pairing this panel started ended while the stream was away (a reconnect after the code
    // expired or the link closed): say how it ended, from the channel, and offer a new code
    if (p.started && !data.qr && !data.pairing_code && data.status === "disconnected") return endedWhileAway(p)
    if (data.qr) {
      drawQr(data.qr)
      startCountdown(p, data.qr_expires_at)
      setPairingStatus("Scan the code with WhatsApp.")
    }
    if (data.pairing_code) {
      drawPairingCode(data.pairing_code)
      startCountdown(p, data.pairing_code_expires_at)
      setPairingStatus(TYPE_CODE)
    }
    showConnectionError(data.connection_error)
  } else if (event === "qr.updated") {
    setPairingHint(null)
    if (data.pairing_code) {
      drawPairingCode(data.pairing_code)
      startCountdown(p, data.pairing_code_expires_at)
      setPairingStatus(TYPE_CODE)
    } else {
      drawQr(data.qr ?? "")
      startCountdown(p, data.qr_expires_at)
      setPairingStatus("Scan the code with WhatsApp.")
    }
  } else if (event === "qr.expired") {
    showExpired(p)
  } else if (event === "qr.state") {
    // no change of status: an attempt that could not reach WhatsApp, with why and when the next is
    if (data.reason === null) return showConnectionError(data.connection_error)
    if (data.to_status === "connected") return onConnected(p, null)
    if (["disconnected", "logged_out", "suspended", "archived"].includes(data.to_status ?? "")) {
      p.done = true
      clearInterval(p.countdown)
      clearCodes()
      setPairingStatus(`Not linked: ${reasonText(data.reason ?? "")}`, true)
      setPairingHint(data.connection_error?.message ?? null)
      $("new-code").hidden = false
      loadChannels().catch(() => {})
    } else if (data.reason) {
      setPairingStatus(reasonText(data.reason), data.to_status === "degraded")
    }
  }
}

function showExpired(p: Pairing) {
  p.done = true
  clearInterval(p.countdown)
  clearCodes()
  $("countdown").textContent = ""
  setPairingStatus(
    p.phoneNumber
      ? "The code expired before it was typed on the phone. Ask for a new one."
      : "The code expired before it was scanned. Ask for a new one.",
    true
  )
  $("new-code").hidden = false
  $("new-code").focus()
}

async function endedWhileAway(p: Pairing) {
  const channel = await api.channels.get({ path: { channelId: p.channel.id } }).catch(() => null)
  if (pairing !== p || p.done) return
  // a snapshot taken before this panel's start reached the runner (the start's answer came back
  // first): the channel has moved on since, and the stream's next frames tell the rest
  if (channel && channel.status !== "disconnected") return
  p.done = true
  p.abort?.abort()
  if (channel?.status_reason === "qr_expired" || channel?.status_reason === "pairing_code_expired") {
    return showExpired(p)
  }
  clearInterval(p.countdown)
  clearCodes()
  $("countdown").textContent = ""
  setPairingStatus(`Not linked: ${reasonText(channel?.status_reason ?? "pairing_interrupted")}`, true)
  $("new-code").hidden = false
  $("new-code").focus()
}

async function onConnected(p: Pairing, number: string | null) {
  p.done = true
  $("code-form").hidden = true
  setPairingHint(null)
  clearInterval(p.countdown)
  clearCodes()
  $("countdown").textContent = ""
  setPairingStatus("Connected.")
  // the number is stored just after the link opens: ask a few times
  let phone = number
  for (let i = 0; !phone && i < 20 && pairing === p; i++) {
    try {
      phone = (await api.channels.get({ path: { channelId: p.channel.id } })).phone_number
    } catch {
      phone = null
    }
    if (!phone) await new Promise((resolve) => setTimeout(resolve, 250 * Math.min(i + 1, 4)))
  }
  if (phone && pairing === p) setPairingStatus(`Connected as ${phone}.`)
  loadChannels().catch(() => {})
}

/**
 * Reads `qr/stream` (server-sent events, which the typed client does not read) with fetch as the
 * signed-in user (the Authorization header, never the token in the URL); reconnects with back-off.
 */
async function openStream(p: Pairing) {
  p.abort?.abort()
  const abort = new AbortController()
  p.abort = abort
  while (!p.stopped && !abort.signal.aborted) {
    try {
      const r = await userFetch(pathOf("qrPairing", "stream", { channelId: p.channel.id }), {
        headers: { accept: "text/event-stream" },
        signal: abort.signal
      })
      // the server could not answer now (a runner starting or moving, a rate limit): try again
      // after its Retry-After or a back-off; any other refusal is final and said
      if (r.status === 429 || r.status >= 500) {
        const after = Number(r.headers.get("retry-after"))
        if (Number.isFinite(after) && after > 0) p.retry = Math.min(30_000, after * 1000)
        await r.body?.cancel().catch(() => {})
        throw new Error(`qr/stream ${r.status}`)
      }
      if (!r.ok || !r.body) {
        setPairingStatus(explain(errorOf(r.status, await r.json().catch(() => null))), true)
        return
      }
      p.attempt = 0
      p.retry = null
      await readEvents(r.body, (event, data) => onFrame(p, event, data as Frame), (ms) => (p.retry = ms))
    } catch {
      if (abort.signal.aborted) return
    }
    if (p.done || p.stopped || abort.signal.aborted) return
    p.attempt += 1
    // the server said when (it is shutting down: another node answers), else back off
    const delay = p.retry ?? Math.min(30_000, 500 * 2 ** Math.min(p.attempt, 6))
    p.retry = null
    setPairingStatus(`The live connection dropped; reconnecting in ${Math.round(delay / 1000)} s…`)
    await new Promise((resolve) => setTimeout(resolve, delay))
  }
}

/** Reads frames until the stream ends; a `retry:` field (a stream the server ended to shut down) calls `onRetry(ms)`. */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: string, data: unknown) => void,
  onRetry: (ms: number) => void
) {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n")
    let end
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let event = "message"
      const data: Array<string> = []
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
        else if (line.startsWith("retry:") && /^\d+$/.test(line.slice(6).trim())) onRetry(Number(line.slice(6).trim()))
      }
      if (data.length > 0) onEvent(event, JSON.parse(data.join("\n")))
    }
  }
}

// ---- messages ------------------------------------------------------------------------------

async function loadMessagesView() {
  const page = await api.channels.list({ urlParams: { limit: 100 } })
  const channels = page.data.filter((c) => c.status !== "archived")
  const select = $<HTMLSelectElement>("messages-channel")
  const previous = select.value
  select.replaceChildren(
    el("option", { value: "", text: "All channels" }),
    ...channels.map((c) => el("option", { value: c.id, text: c.name }))
  )
  if (channels.some((c) => c.id === previous)) select.value = previous
  state.channels = channels
  const sendable = channels.filter((c) => c.status === "connected")
  const from = $<HTMLSelectElement>("send-channel")
  from.replaceChildren(...sendable.map((c) => el("option", { value: c.id, text: `${c.name} (${c.provider})` })))
  const preferred = sendable.find((c) => c.is_default) ?? sendable[0]
  if (preferred) from.value = preferred.id
  $("send-form").querySelector("button")!.disabled = sendable.length === 0
  $("send-none").hidden = sendable.length > 0
  await pollMessages()
}

$("messages-channel").addEventListener("change", () => {
  stopPolling()
  pollMessages()
})

/** The channel chosen in a select of the page's channels. */
const chosenChannel = (id: string) => state.channels.find((c) => c.id === $<HTMLSelectElement>(id).value)

async function pollMessages() {
  stopPolling()
  const channel = chosenChannel("messages-channel")
  try {
    const page = await api.messages.list({
      urlParams: { limit: 25, ...(channel ? { channel_id: channel.id } : {}) }
    })
    const byId = new Map<string, (typeof page.data)[number]>(page.data.map((m) => [m.id, m]))
    // rows whose message did not change are kept (a playing audio keeps playing)
    keyed(
      rowsOf("messages"),
      page.data,
      (m) => m.id,
      (m) =>
        JSON.stringify([
          m.status,
          m.media?.status,
          m.failure,
          summary(m.context?.reply_to ? byId.get(m.context.reply_to) : undefined)
        ]),
      (m) =>
        el(
          "tr",
          { "data-message": m.id, "data-type": m.type ?? "text" },
          cell("When", when(m.created_at)),
          cell(
            m.direction === "inbound" ? "From" : "To",
            `${m.direction === "inbound" ? "← " : "→ "}${m.direction === "inbound" ? m.from ?? "" : m.to}`
          ),
          cell("Content", ...messageContent(m, byId)),
          cell(
            "Status",
            badge(m.status),
            m.failure ? el("div", { class: "error", text: m.failure.code }) : ""
          ),
          cell("", el("button", { type: "button", onclick: () => showTimeline(m.id), text: "Timeline" }))
        )
    )
    if (page.data.length === 0) {
      rowsOf("messages").replaceChildren(el("tr", {}, el("td", { colspan: "5", text: "No messages yet." })))
    }
  } catch (err) {
    notice(explain(err))
  }
  pollAgain("messages", pollMessages, 2000)
}

$("send-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("send-error", null)
  // the last send's line goes with a new try: a "Queued ..." left above a later error misleads
  $("send-result").textContent = ""
  const channel = chosenChannel("send-channel")
  try {
    const { client } = channel ? await callerFor(channel.id) : { client: api }
    const sent = await client.messages.send({
      payload: {
        ...(channel ? { channel_id: channel.id } : {}),
        to: input("send-to").value.trim(),
        text: { body: $<HTMLTextAreaElement>("send-text").value }
      },
      headers: {}
    })
    $<HTMLTextAreaElement>("send-text").value = ""
    $("send-result").textContent = `Queued ${sent.id} to ${sent.to}.`
    await pollMessages()
  } catch (err) {
    formError("send-error", err)
  }
})

async function showTimeline(messageId: Answer<"messages", "get">["id"]) {
  try {
    const m = await api.messages.get({ path: { messageId } })
    $("timeline-title").textContent = `Timeline of the message to ${m.to}`
    $("timeline-list").replaceChildren(
      ...m.timeline.map((t) => el("li", {}, `${when(t.at)} `, badge(t.to_state), t.reason ? ` ${t.reason}` : ""))
    )
    $("timeline").hidden = false
    // below a page of messages it would open out of sight: bring it into view, its title focused
    // (keyboard and screen-reader users land on it too)
    $("timeline").scrollIntoView({ block: "start" })
    $("timeline-title").focus({ preventScroll: true })
  } catch (err) {
    notice(explain(err))
  }
}

// ---- webhooks ------------------------------------------------------------------------------

type EventType = Answer<"webhooks", "eventTypes">["data"][number]["type"]
/** The event types the server offers, as it named them (the form's checkboxes). */
let eventTypes: ReadonlyArray<EventType> = []

async function loadEventTypes() {
  const box = $("endpoint-events")
  if (box.childElementCount > 0) return
  const types = await api.webhooks.eventTypes({ urlParams: {} })
  eventTypes = types.data.map((t) => t.type)
  box.replaceChildren(
    el("legend", { text: "Events to receive" }),
    ...types.data.map((t) => {
      const id = `event-${t.type.replace(/\W/g, "-")}`
      const box = el("input", { type: "checkbox", id, value: t.type })
      if (t.type.startsWith("message.")) box.checked = true
      return el("div", { class: "check" }, box, el("label", { for: id, text: t.type }))
    })
  )
}

$("endpoint-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("endpoint-error", null)
  const checked = new Set(
    [...$("endpoint-events").querySelectorAll<HTMLInputElement>("input:checked")].map((i) => i.value)
  )
  try {
    const created = await api.webhooks.create({
      payload: { url: input("endpoint-url").value.trim(), event_types: eventTypes.filter((t) => checked.has(t)) }
    })
    input("endpoint-url").value = ""
    $("endpoint-secret").replaceChildren(secretBox(`signing secret for ${created.url}`, created.secret))
    $("endpoint-secret").hidden = false
    await loadWebhooks()
    $("endpoint-secret").querySelector("button")?.focus()
  } catch (err) {
    formError("endpoint-error", err)
  }
})

type Endpoint = Answer<"webhooks", "get">
type Delivery = Answer<"webhooks", "delivery">

async function loadWebhooks() {
  await loadEventTypes()
  const [endpoints, deliveries] = await Promise.all([
    api.webhooks.list({ urlParams: { limit: 100 } }),
    api.webhooks.deliveries({ urlParams: { limit: 25 } })
  ])
  $("endpoints").replaceChildren(...endpoints.data.map((e) =>
    el(
      "li",
      { "data-endpoint": e.id },
      el("code", { text: e.url }),
      " ",
      badge(e.status),
      el("span", {
        class: "muted",
        text: ` ${e.event_types.join(", ")}${
          e.consecutive_failures ? ` · ${failuresInARow(e.consecutive_failures)}` : ""
        }`
      }),
      " ",
      el("button", { type: "button", class: "danger", onclick: () => deleteEndpoint(e), text: `Delete ${e.url}` })
    )
  ))
  if (endpoints.data.length === 0) $("endpoints").append(el("li", { text: "No endpoints yet." }))
  rowsOf("deliveries").replaceChildren(...deliveries.data.map((d) => {
    const replay = ["failed", "dead"].includes(d.status)
      ? el("button", { type: "button", onclick: () => replayDelivery(d), text: `Replay ${deliveryEvent(d)}` })
      : ""
    return el(
      "tr",
      { "data-delivery": d.id },
      cell("When", when(d.created_at)),
      cell("Event", deliveryEvent(d)),
      cell(
        "Status",
        badge(d.status),
        d.failure_reason && d.failure_reason !== "ok"
          ? el("div", { class: "muted", text: d.failure_reason.replace(/_/g, " ") })
          : ""
      ),
      cell("Response", d.response_status === null ? "—" : `HTTP ${d.response_status}`),
      cell("Attempts", `${d.attempt_count}/${d.max_attempts}${d.replay_of ? " · replay" : ""}`),
      cell("", replay)
    )
  }))
  if (deliveries.data.length === 0) {
    rowsOf("deliveries").append(el("tr", {}, el("td", { colspan: "6", text: "No deliveries yet." })))
  }
}

async function deleteEndpoint(e: Endpoint) {
  if (!(await confirmDialog(`Delete the endpoint ${e.url}? It receives nothing more.`, "Delete"))) return
  try {
    await api.webhooks.delete({ path: { endpointId: e.id } })
    await loadWebhooks()
  } catch (err) {
    notice(explain(err))
  }
}

async function replayDelivery(d: Delivery) {
  try {
    await api.webhooks.replay({ path: { deliveryId: d.id } })
    notice(null)
    await loadWebhooks()
  } catch (err) {
    notice(explain(err))
  }
}

// ---- start: a session cookie from an earlier visit signs in again ----------------------------

// Only when the server left its hint (`signed_in`, set with the refresh cookie, expired on sign-out):
// a visitor who is signed out gets the form at once, without a refused refresh in the browser's log.
if (hasSessionHint()) {
  refresh().then((ok) => {
    if (ok) return afterSignIn()
    forgetSessionHint() // the session ended elsewhere (revoked, expired): ask once, not on every load
    $("email").focus()
  }, () => $("email").focus())
} else $("email").focus()
