// Switchboard console (docs/CONSOLE.md "Console"). No build step: an ES module served from our origin.
// The access token lives in this module's memory only; the refresh token is the httpOnly cookie
// the login sets, so a reload signs in again through POST /v1/auth/refresh.
// Over 350 lines: sign-in, navigation, channels, pairing, messages and webhooks in one module,
// served as is with no build step; each part is a short section below. Shared helpers are in
// lib.mjs; API keys and the sandbox in developers.mjs, the inbox in inbox.mjs, contacts and
// templates in directory.mjs.
import {
  $,
  api,
  ApiError,
  badge,
  base,
  cell,
  confirmDialog,
  el,
  explain,
  forgetSessionHint,
  formError,
  hasSessionHint,
  headersFor,
  keyFor,
  notice,
  pollAgain,
  refresh,
  secretBox,
  state,
  stopPolling,
  views,
  when,
  whenSignedOut
} from "./lib.mjs"
import { deliveryEvent, failuresInARow } from "./words.mjs"
import "./developers.mjs"
import "./inbox.mjs"
import "./directory.mjs"
import { forgetMedia, keyed, messageContent, summary } from "./media.mjs"
import { healthPanel } from "./health.mjs"
import qrcode from "./qrcode.mjs"

// ---- session -------------------------------------------------------------------------------

async function afterSignIn() {
  const me = await api("GET", "/v1/auth/me")
  const select = $("workspace")
  select.replaceChildren(...me.workspaces.map((w) => el("option", { value: w.id, text: `${w.name} (${w.role})` })))
  state.workspace = me.workspaces[0]?.id ?? null
  $("who").textContent = me.user?.email ?? ""
  $("signin").hidden = true
  $("app").hidden = false
  $("session").hidden = false
  notice(null)
  await show("channels")
}

function signedOut(message) {
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
    const r = await fetch(`${base}/v1/auth/login`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: $("email").value, password: $("password").value })
    })
    const body = await r.json()
    if (!r.ok) throw new ApiError(r.status, body)
    state.token = body.access_token
    $("password").value = ""
    await afterSignIn()
  } catch (err) {
    // the server's words (one wording for a wrong password, API and console alike)
    error.textContent = explain(err)
    error.hidden = false
  }
})

$("logout").addEventListener("click", async () => {
  try {
    await api("POST", "/v1/auth/logout")
  } finally {
    signedOut(null)
    $("email").focus()
  }
})

$("workspace").addEventListener("change", async (event) => {
  state.workspace = event.target.value
  stopPairing()
  await show(state.view)
})

// ---- navigation ----------------------------------------------------------------------------

for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => show(tab.dataset.view))

async function show(view) {
  state.view = view
  stopPolling()
  // an error line of the page left behind is stale on the next one
  notice(null)
  for (const tab of document.querySelectorAll(".tab")) {
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

async function loadChannels() {
  const page = await api("GET", "/v1/channels?limit=100")
  state.channels = page.data.filter((c) => c.status !== "archived")
  $("channels").tBodies[0].replaceChildren(...state.channels.map(channelRow))
  if (state.channels.length === 0) {
    $("channels").tBodies[0].append(el("tr", {}, el("td", { colspan: "5", text: "No channels yet: create a QR channel above to link a phone, or open a sandbox session under \"API keys & sandbox\" to try everything without one." })))
  }
}

function channelRow(c) {
  const actions = el("div", { class: "row" })
  if (c.provider === "qr" && c.status !== "connected") {
    actions.append(el("button", { type: "button", onclick: () => startPairing(c), text: `Link ${c.name}` }))
  }
  actions.append(
    el("button", { type: "button", onclick: () => rename(c), text: `Rename ${c.name}` }),
    el("button", { type: "button", class: "danger", onclick: () => archive(c), text: `Archive ${c.name}` })
  )
  const details = el("div", {}, el("span", { class: "muted", text: `${c.provider}${c.is_default ? " · default" : ""}` }))
  if (c.status_reason) details.append(el("div", { class: "muted", text: reasonText(c.status_reason) }))
  const caps = el("div", { class: "muted caps" })
  details.append(caps)
  if (c.status === "connected") {
    api("GET", `/v1/channels/${c.id}/capabilities`).then(
      (cap) => { caps.textContent = `${cap.max_throughput_mps} msg/s · ${cap.message_types.join(", ")}` },
      () => {}
    )
  }
  if (c.provider === "qr" && c.status !== "archived") {
    // the number's health: the safety cap, the warm-up, WhatsApp's restriction signals
    details.append(healthPanel(c))
  }
  return el("tr", { "data-channel": c.id },
    cell("Name", el("strong", { text: c.name })),
    cell("Status", badge(c.status)),
    cell("Number", c.phone_number ?? "—"),
    cell("Details", details),
    cell("Actions", actions))
}

$("create-channel").addEventListener("submit", async (event) => {
  event.preventDefault()
  try {
    await api("POST", "/v1/channels", { provider: "qr", name: $("channel-name").value.trim() })
    $("channel-name").value = ""
    notice(null)
    await loadChannels()
  } catch (err) {
    notice(explain(err))
  }
})

async function rename(c) {
  const name = window.prompt(`New name for ${c.name}`, c.name)
  if (name === null || name.trim() === "" || name.trim() === c.name) return
  try {
    await api("PATCH", `/v1/channels/${c.id}`, { name: name.trim() })
    await loadChannels()
  } catch (err) {
    notice(explain(err))
  }
}

async function archive(c) {
  if (!(await confirmDialog(`Archive ${c.name}? It stops sending and receiving; this cannot be undone.`, "Archive"))) return
  try {
    await api("DELETE", `/v1/channels/${c.id}`)
    if (state.pairing?.channel.id === c.id) stopPairing()
    await loadChannels()
  } catch (err) {
    notice(explain(err))
  }
}

// ---- QR pairing ----------------------------------------------------------------------------

const REASONS = {
  link_lost: "The link to WhatsApp was lost; reconnecting.",
  reconnect_budget_exhausted: "WhatsApp could not be reached after several tries. Check the server's network, then link again.",
  logged_out_from_phone: "The phone removed this linked device. Link it again with a new code.",
  logged_out: "This device was logged out. Link it again with a new code.",
  connection_replaced: "Another session took over this number. Link again if this console should own it.",
  forbidden: "WhatsApp refused this number. Check the account on the phone.",
  client_outdated: "WhatsApp asks for a newer client version; the operator must update.",
  pairing_interrupted: "Pairing was interrupted. Start again with a new code.",
  qr_expired: "The code expired before it was scanned.",
  pairing_code_expired: "The code expired before it was typed on the phone.",
  phone_number_refused: "WhatsApp does not link this number. Check it (with its country code) and try again.",
  pairing_code_issued: "On the phone: WhatsApp, Settings, Linked devices, Link a device, Link with phone number instead, then type this code.",
  suspended: "The workspace or channel is suspended.",
  paired: "Linked.",
  qr_issued: "Scan the code.",
  pairing_started: "Starting…"
}
const reasonText = (reason) => REASONS[reason] ?? String(reason).replace(/_/g, " ")

function stopPairing() {
  const p = state.pairing
  if (!p) return
  p.stopped = true
  p.abort?.abort()
  clearInterval(p.countdown)
  state.pairing = null
  $("pairing").hidden = true
  clearCodes()
  setPairingHint(null)
}

$("close-pairing").addEventListener("click", () => { stopPairing(); loadChannels() })
$("new-code").addEventListener("click", () => state.pairing && beginPairing(state.pairing))
// "Link with a code": WhatsApp's 8-character code for a number, typed on the phone instead of scanning
$("code-form").addEventListener("submit", (e) => {
  e.preventDefault()
  const p = state.pairing
  if (!p) return
  p.phoneNumber = $("code-phone").value.replace(/[\s()-]/g, "")
  beginPairing(p)
})

async function startPairing(channel) {
  stopPairing()
  const p = { channel, stopped: false, abort: null, countdown: null, attempt: 0, retry: null, done: false }
  state.pairing = p
  $("pairing").hidden = false
  $("pairing-title").textContent = `Link a phone to ${channel.name}`
  await beginPairing(p)
}

async function beginPairing(p) {
  $("new-code").hidden = true
  $("code-form").hidden = false
  p.done = false
  setPairingHint(null)
  setPairingStatus("Asking WhatsApp for a code…")
  p.started = false
  openStream(p)
  try {
    // linking with a code once a number was given, else QR codes (no body)
    const body = p.phoneNumber ? { method: "code", phone_number: p.phoneNumber } : undefined
    await api("POST", `/v1/channels/${p.channel.id}/qr/start`, body)
    p.started = true
  } catch (err) {
    setPairingStatus(explain(err), true)
    $("new-code").hidden = false
  }
}

function setPairingStatus(text, bad = false) {
  const s = $("pairing-status")
  s.textContent = text
  s.className = bad ? "error" : ""
}

/** What to check, from the server, when WhatsApp cannot be reached (`null` hides it). */
function setPairingHint(text) {
  const h = $("pairing-hint")
  h.textContent = text ?? ""
  h.hidden = !text
}

/** A `connection_error` (`qr/stream`: `snapshot`, `qr.state`): the reason as a hint; while another attempt follows, say so. */
function showConnectionError(error) {
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
function drawPairingCode(code) {
  $("qr").replaceChildren()
  $("pairing-code").textContent = `${code.slice(0, 4)}-${code.slice(4)}`
  $("pairing-code").hidden = false
}

const TYPE_CODE = REASONS.pairing_code_issued

function drawQr(text) {
  $("pairing-code").hidden = true
  const qr = qrcode(0, "M")
  qr.addData(text)
  qr.make()
  $("qr").innerHTML = qr.createSvgTag({ cellSize: 4, margin: 4, scalable: true })
  $("qr").dataset.code = String(Date.now())
}

function startCountdown(p, expiresAt) {
  clearInterval(p.countdown)
  const tick = () => {
    const left = Math.max(0, Math.round((new Date(expiresAt).getTime() - Date.now()) / 1000))
    $("countdown").textContent = left > 0 ? `Code valid for ${left} s` : "Code expired"
  }
  tick()
  p.countdown = setInterval(tick, 1000)
}

function onFrame(p, event, data) {
  if (event === "snapshot") {
    if (data.status === "connected") return onConnected(p, data.phone_number)
    // the pairing this panel started ended while the stream was away (a reconnect after the code
    // expired or the link closed): say how it ended, from the channel, and offer a new code
    if (p.started && !data.qr && !data.pairing_code && data.status === "disconnected") return endedWhileAway(p)
    if (data.qr) { drawQr(data.qr); startCountdown(p, data.qr_expires_at); setPairingStatus("Scan the code with WhatsApp.") }
    if (data.pairing_code) { drawPairingCode(data.pairing_code); startCountdown(p, data.pairing_code_expires_at); setPairingStatus(TYPE_CODE) }
    showConnectionError(data.connection_error)
  } else if (event === "qr.updated") {
    setPairingHint(null)
    if (data.pairing_code) {
      drawPairingCode(data.pairing_code)
      startCountdown(p, data.pairing_code_expires_at)
      setPairingStatus(TYPE_CODE)
    } else {
      drawQr(data.qr)
      startCountdown(p, data.qr_expires_at)
      setPairingStatus("Scan the code with WhatsApp.")
    }
  } else if (event === "qr.expired") {
    showExpired(p)
  } else if (event === "qr.state") {
    // no change of status: an attempt that could not reach WhatsApp, with why and when the next is
    if (data.reason === null) return showConnectionError(data.connection_error)
    if (data.to_status === "connected") return onConnected(p, null)
    if (["disconnected", "logged_out", "suspended", "archived"].includes(data.to_status)) {
      p.done = true
      clearInterval(p.countdown)
      clearCodes()
      setPairingStatus(`Not linked: ${reasonText(data.reason)}`, true)
      setPairingHint(data.connection_error?.message ?? null)
      $("new-code").hidden = false
      loadChannels().catch(() => {})
    } else if (data.reason) {
      setPairingStatus(reasonText(data.reason), data.to_status === "degraded")
    }
  }
}

function showExpired(p) {
  p.done = true
  clearInterval(p.countdown)
  clearCodes()
  $("countdown").textContent = ""
  setPairingStatus(
    p.phoneNumber ? "The code expired before it was typed on the phone. Ask for a new one." : "The code expired before it was scanned. Ask for a new one.",
    true
  )
  $("new-code").hidden = false
  $("new-code").focus()
}

async function endedWhileAway(p) {
  const channel = await api("GET", `/v1/channels/${p.channel.id}`).catch(() => null)
  if (state.pairing !== p || p.done) return
  // a snapshot taken before this panel's start reached the runner (the start's answer came back
  // first): the channel has moved on since, and the stream's next frames tell the rest
  if (channel && channel.status !== "disconnected") return
  p.done = true
  p.abort?.abort()
  if (channel?.status_reason === "qr_expired" || channel?.status_reason === "pairing_code_expired") return showExpired(p)
  clearInterval(p.countdown)
  clearCodes()
  $("countdown").textContent = ""
  setPairingStatus(`Not linked: ${reasonText(channel?.status_reason ?? "pairing_interrupted")}`, true)
  $("new-code").hidden = false
  $("new-code").focus()
}

async function onConnected(p, number) {
  p.done = true
  $("code-form").hidden = true
  setPairingHint(null)
  clearInterval(p.countdown)
  clearCodes()
  $("countdown").textContent = ""
  setPairingStatus("Connected.")
  // the number is stored just after the link opens: ask a few times
  let phone = number
  for (let i = 0; !phone && i < 20 && state.pairing === p; i++) {
    try { phone = (await api("GET", `/v1/channels/${p.channel.id}`)).phone_number } catch { phone = null }
    if (!phone) await new Promise((resolve) => setTimeout(resolve, 250 * Math.min(i + 1, 4)))
  }
  if (phone && state.pairing === p) setPairingStatus(`Connected as ${phone}.`)
  loadChannels().catch(() => {})
}

/** Reads `qr/stream` with fetch (the Authorization header, never the token in the URL); reconnects with back-off. */
async function openStream(p) {
  p.abort?.abort()
  const abort = new AbortController()
  p.abort = abort
  while (!p.stopped && !abort.signal.aborted) {
    try {
      const r = await fetch(`${base}/v1/channels/${p.channel.id}/qr/stream`, {
        headers: { ...headersFor(false), accept: "text/event-stream" },
        credentials: "same-origin",
        signal: abort.signal
      })
      if (r.status === 401 && (await refresh())) continue
      // the server could not answer now (a runner starting or moving, a rate limit): try again
      // after its Retry-After or a back-off; any other refusal is final and said
      if (r.status === 429 || r.status >= 500) {
        const after = Number(r.headers.get("retry-after"))
        if (Number.isFinite(after) && after > 0) p.retry = Math.min(30_000, after * 1000)
        await r.body?.cancel().catch(() => {})
        throw new Error(`qr/stream ${r.status}`)
      }
      if (!r.ok) {
        const body = await r.json().catch(() => null)
        setPairingStatus(explain(new ApiError(r.status, body)), true)
        return
      }
      p.attempt = 0
      p.retry = null
      await readEvents(r.body, (event, data) => onFrame(p, event, data), (ms) => (p.retry = ms))
    } catch (err) {
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
async function readEvents(body, onEvent, onRetry) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += value.replace(/\r\n?/g, "\n")
    let end
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let event = "message"
      const data = []
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
        else if (line.startsWith("retry:") && /^\d+$/.test(line.slice(6).trim())) onRetry?.(Number(line.slice(6).trim()))
      }
      if (data.length > 0) onEvent(event, JSON.parse(data.join("\n")))
    }
  }
}

// ---- messages ------------------------------------------------------------------------------

async function loadMessagesView() {
  const page = await api("GET", "/v1/channels?limit=100")
  const channels = page.data.filter((c) => c.status !== "archived")
  const select = $("messages-channel")
  const previous = select.value
  select.replaceChildren(el("option", { value: "", text: "All channels" }),
    ...channels.map((c) => el("option", { value: c.id, text: c.name })))
  if (channels.some((c) => c.id === previous)) select.value = previous
  state.channels = channels
  const sendable = channels.filter((c) => c.status === "connected")
  const from = $("send-channel")
  from.replaceChildren(...sendable.map((c) => el("option", { value: c.id, text: `${c.name} (${c.provider})` })))
  const preferred = sendable.find((c) => c.is_default) ?? sendable[0]
  if (preferred) from.value = preferred.id
  $("send-form").querySelector("button").disabled = sendable.length === 0
  $("send-none").hidden = sendable.length > 0
  await pollMessages()
}

$("messages-channel").addEventListener("change", () => { stopPolling(); pollMessages() })

async function pollMessages() {
  stopPolling()
  const channel = $("messages-channel").value
  try {
    const page = await api("GET", `/v1/messages?limit=25${channel ? `&channel_id=${encodeURIComponent(channel)}` : ""}`)
    const byId = new Map(page.data.map((m) => [m.id, m]))
    // rows whose message did not change are kept (a playing audio keeps playing)
    keyed($("messages").tBodies[0], page.data, (m) => m.id,
      (m) => JSON.stringify([m.status, m.media?.status, m.failure, summary(byId.get(m.context?.reply_to))]),
      (m) => el("tr", { "data-message": m.id, "data-type": m.type ?? "text" },
        cell("When", when(m.created_at)),
        cell(m.direction === "inbound" ? "From" : "To", `${m.direction === "inbound" ? "← " : "→ "}${m.direction === "inbound" ? m.from ?? "" : m.to}`),
        cell("Content", ...messageContent(m, byId)),
        cell("Status", badge(m.status), m.failure ? el("div", { class: "error", text: m.failure.message ?? m.failure.code }) : ""),
        cell("", el("button", { type: "button", onclick: () => showTimeline(m.id), text: "Timeline" }))))
    if (page.data.length === 0) $("messages").tBodies[0].replaceChildren(el("tr", {}, el("td", { colspan: "5", text: "No messages yet." })))
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
  const channel = $("send-channel").value
  try {
    const sent = await api("POST", "/v1/messages", {
      channel_id: channel,
      to: $("send-to").value.trim(),
      text: { body: $("send-text").value }
    }, await keyFor(channel))
    $("send-text").value = ""
    $("send-result").textContent = `Queued ${sent.id} to ${sent.to}.`
    await pollMessages()
  } catch (err) {
    formError("send-error", err)
  }
})

async function showTimeline(id) {
  try {
    const m = await api("GET", `/v1/messages/${id}`)
    $("timeline-title").textContent = `Timeline of the message to ${m.to}`
    $("timeline-list").replaceChildren(...m.timeline.map((t) =>
      el("li", {}, `${when(t.at)} `, badge(t.to_state), t.reason ? ` ${t.reason}` : "")))
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

async function loadEventTypes() {
  const box = $("endpoint-events")
  if (box.childElementCount > 0) return
  const types = await api("GET", "/v1/webhook-event-types")
  box.replaceChildren(el("legend", { text: "Events to receive" }), ...types.data.map((t) => {
    const id = `event-${t.type.replace(/\W/g, "-")}`
    const input = el("input", { type: "checkbox", id, value: t.type })
    if (t.type.startsWith("message.")) input.checked = true
    return el("div", { class: "check" }, input, el("label", { for: id, text: t.type }))
  }))
}

$("endpoint-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("endpoint-error", null)
  const types = [...$("endpoint-events").querySelectorAll("input:checked")].map((i) => i.value)
  try {
    const created = await api("POST", "/v1/webhook-endpoints", { url: $("endpoint-url").value.trim(), event_types: types })
    $("endpoint-url").value = ""
    $("endpoint-secret").replaceChildren(secretBox(`signing secret for ${created.url}`, created.secret))
    $("endpoint-secret").hidden = false
    await loadWebhooks()
    $("endpoint-secret").querySelector("button").focus()
  } catch (err) {
    formError("endpoint-error", err)
  }
})

async function loadWebhooks() {
  await loadEventTypes()
  const [endpoints, deliveries] = await Promise.all([
    api("GET", "/v1/webhook-endpoints?limit=100"),
    api("GET", "/v1/webhook-deliveries?limit=25")
  ])
  $("endpoints").replaceChildren(...endpoints.data.map((e) =>
    el("li", { "data-endpoint": e.id }, el("code", { text: e.url }), " ", badge(e.status),
      el("span", { class: "muted", text: ` ${e.event_types.join(", ")}${e.consecutive_failures ? ` · ${failuresInARow(e.consecutive_failures)}` : ""}` }),
      " ", el("button", { type: "button", class: "danger", onclick: () => deleteEndpoint(e), text: `Delete ${e.url}` }))))
  if (endpoints.data.length === 0) $("endpoints").append(el("li", { text: "No endpoints yet." }))
  $("deliveries").tBodies[0].replaceChildren(...deliveries.data.map((d) => {
    const replay = ["failed", "dead"].includes(d.status)
      ? el("button", { type: "button", onclick: () => replayDelivery(d), text: `Replay ${deliveryEvent(d)}` })
      : ""
    return el("tr", { "data-delivery": d.id },
      cell("When", when(d.created_at)),
      cell("Event", deliveryEvent(d)),
      cell("Status", badge(d.status), d.failure_reason && d.failure_reason !== "ok" ? el("div", { class: "muted", text: d.failure_reason.replace(/_/g, " ") }) : ""),
      cell("Response", d.response_status === null ? "—" : `HTTP ${d.response_status}`),
      cell("Attempts", `${d.attempt_count}/${d.max_attempts}${d.replay_of ? " · replay" : ""}`),
      cell("", replay))
  }))
  if (deliveries.data.length === 0) $("deliveries").tBodies[0].append(el("tr", {}, el("td", { colspan: "6", text: "No deliveries yet." })))
}

async function deleteEndpoint(e) {
  if (!(await confirmDialog(`Delete the endpoint ${e.url}? It receives nothing more.`, "Delete"))) return
  try {
    await api("DELETE", `/v1/webhook-endpoints/${e.id}`)
    await loadWebhooks()
  } catch (err) {
    notice(explain(err))
  }
}

async function replayDelivery(d) {
  try {
    await api("POST", `/v1/webhook-deliveries/${d.id}/replay`)
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
