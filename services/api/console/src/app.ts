/**
 * Switchboard console (docs/CONSOLE.md "Console"): sign-in, navigation, channels, messages and
 * webhooks, each a short section below (the QR pairing panel is pairing.ts). The access token lives in memory only; the
 * refresh token is the httpOnly cookie the login sets, so a reload signs in again through
 * `POST /v1/auth/refresh`. Shared helpers and the typed client are in lib.ts; API keys and the
 * sandbox in developers.ts, the inbox in inbox.ts, contacts and templates in directory.ts.
 * Bundled by `npm run build` (scripts/build-console.ts).
 */
import "./developers.js"
import "./directory.js"
import { healthPanel } from "./health.js"
import "./inbox.js"
import type { Answer, Channel } from "./lib.js"
import {
  $,
  anonymous,
  api,
  badge,
  callerFor,
  cell,
  confirmDialog,
  el,
  explain,
  forgetSessionHint,
  formError,
  hasSessionHint,
  notice,
  pollAgain,
  refresh,
  secretBox,
  state,
  stopPolling,
  views,
  when,
  whenSignedOut
} from "./lib.js"
import { forgetMedia, keyed, messageContent, summary } from "./media.js"
import { onChannelsChanged, pairingChannelId, reasonText, startPairing, stopPairing } from "./pairing.js"
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

onChannelsChanged(() => loadChannels())

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
    if (pairingChannelId() === c.id) stopPairing()
    await loadChannels()
  } catch (err) {
    notice(explain(err))
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
