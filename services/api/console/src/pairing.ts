/**
 * The console's QR pairing panel (docs/CONSOLE.md "Console"): `qr/start` (QR codes, or WhatsApp's
 * pairing code for a number), the live `qr/stream` read with the signed-in user's token and
 * reconnected with back-off, the codes and their countdown, and how the pairing ended. The
 * channels table (app.ts) opens it (`startPairing`) and is told to reload when a link ends
 * (`onChannelsChanged`).
 */
import qrcode from "qrcode-generator"
import type { Channel, Request } from "./lib.js"
import { $, api, errorOf, explain, pathOf, userFetch } from "./lib.js"

const input = (id: string) => $<HTMLInputElement>(id)

/** Reloads the channels table (set by app.ts): a pairing that ends changes a channel's row. */
let loadChannels: () => Promise<void> = async () => {}
export const onChannelsChanged = (reload: () => Promise<void>) => {
  loadChannels = reload
}

/** What a channel's `status_reason` means, in the console's words. */
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
export const reasonText = (reason: string) => REASONS[reason] ?? String(reason).replace(/_/g, " ")

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

/** The channel whose pairing the panel shows, if any. */
export const pairingChannelId = (): string | null => pairing?.channel.id ?? null

export function stopPairing() {
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

export async function startPairing(channel: Channel) {
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
