// The inbox (docs/CONSOLE.md "Inbox"): conversations with unread counts, newest first, polled every
// 3 s (new conversations and messages appear, counts move); a conversation's thread with every
// kind (media.mjs; read marker moved on opening and when a message arrives while it is open),
// reply with text or a file, internal notes, assign to any member of the workspace, close and reopen.
// Each row names the contact (or the number), the channel, the last message and its time.
import { $, api, badge, el, explain, formError, keyFor, pollAgain, shortWhen, state, views, when } from "./lib.mjs"
import { keyed, messageContent, preview, reactionsOf, size, summary } from "./media.mjs"
import { limitBytes, normalize } from "./media-types.mjs"

const inbox = { open: null, me: null, members: [], channels: new Map(), channelsOf: null, tried: new Set() }

views.set("inbox", async () => {
  if (!inbox.me) inbox.me = (await api("GET", "/v1/auth/me")).user
  // who a conversation can be assigned to: the workspace's members (read again on each visit)
  inbox.members = (await api("GET", "/v1/workspace/members?limit=100")).data
  await loadChannelNames()
  await refreshInbox()
})

$("inbox-status").addEventListener("change", () => refreshInbox())

/** The workspace's channels by id, archived ones included (an ended sandbox session's thread stays). */
async function loadChannelNames() {
  const page = await api("GET", "/v1/channels?limit=100")
  inbox.channels = new Map(page.data.map((ch) => [ch.id, ch]))
  if (inbox.channelsOf !== state.workspace) inbox.tried.clear()
  inbox.channelsOf = state.workspace
}

/** The contact as a person reads it: the name, else the number, else what WhatsApp leaves us. */
const contactName = (c) =>
  c.contact ? c.contact.name ?? c.contact.phone_number ?? "A contact whose number WhatsApp hides" : "Deleted contact"

/** The channel a conversation is on: its name, and its number when it has one. */
function channelLabel(c) {
  const ch = inbox.channels.get(c.channel_id)
  if (!ch) return "a channel"
  const number = ch.phone_number && !ch.name.includes(ch.phone_number) ? ` (${ch.phone_number})` : ""
  return `${ch.name}${number}${ch.status === "archived" ? ", archived" : ""}`
}

/** One conversation in the list: who, on which channel, the last message and when. */
function conversationRow(c) {
  const unread = c.unread_count > 0 ? el("span", { class: "unread", text: `${c.unread_count} unread` }) : ""
  const last = c.last_message
  const at = last?.created_at ?? c.last_message_at
  const number = c.contact?.name && c.contact.phone_number ? el("span", { class: "muted", text: ` ${c.contact.phone_number}` }) : ""
  const open = el("button", {
    type: "button",
    class: "conversation",
    "aria-current": inbox.open?.id === c.id ? "true" : "false",
    onclick: () => openConversation(c.id)
  },
    el("span", { class: "conv-top" },
      el("span", { class: "conv-who" }, el("strong", { text: contactName(c) }), number),
      at ? el("time", { class: "muted conv-time", datetime: at, title: when(at), text: shortWhen(at) }) : ""),
    el("span", { class: "conv-channel muted", text: `${channelLabel(c)}${c.status === "closed" ? " · closed" : ""}` }),
    el("span", { class: "conv-bottom" },
      el("span", { class: "conv-preview", text: last ? `${last.direction === "outbound" ? "You: " : ""}${preview(last)}` : "No messages yet." }),
      unread))
  return el("li", { "data-conversation": c.id }, open)
}

async function refreshInbox() {
  try {
    const status = $("inbox-status").value
    const page = await api("GET", `/v1/conversations?limit=50${status ? `&status=${status}` : ""}`)
    formError("inbox-error", null)
    // rows that did not change are kept, so a refresh never takes the keyboard focus away
    // a channel created since the list was read (a new sandbox session) is read again by name
    const unknown = page.data.filter((c) => !inbox.channels.has(c.channel_id) && !inbox.tried.has(c.channel_id))
    if (inbox.channelsOf !== state.workspace || unknown.length > 0) {
      for (const c of unknown) inbox.tried.add(c.channel_id)
      await loadChannelNames()
    }
    keyed($("conversations"), page.data, (c) => c.id,
      (c) => JSON.stringify([contactName(c), channelLabel(c), c.unread_count, c.status, c.last_message_at,
        c.last_message?.id, c.last_message?.status, inbox.open?.id === c.id]),
      conversationRow)
    if (page.data.length === 0) $("conversations").replaceChildren(el("li", { class: "muted", text: "No conversations." }))
    const total = page.data.reduce((n, c) => n + c.unread_count, 0)
    $("inbox-unread").textContent = total > 0 ? `${total} unread` : ""
    const shown = inbox.open && page.data.find((c) => c.id === inbox.open.id)
    // a message that arrives in the conversation someone is looking at is read there and then
    if (shown && shown.unread_count > 0 && document.visibilityState === "visible") {
      await api("POST", `/v1/conversations/${shown.id}/read`).catch(() => {})
      return refreshInbox()
    }
    if (inbox.open) await renderThread(inbox.open.id)
  } catch (err) {
    formError("inbox-error", err)
  }
  pollAgain("inbox", refreshInbox, 3000)
}

async function openConversation(id) {
  inbox.open = { id }
  await api("POST", `/v1/conversations/${id}/read`).catch(() => {})
  await renderThread(id)
  $("thread").hidden = false
  $("thread-title").focus()
  await refreshInbox()
}

async function renderThread(id) {
  const [c, messages, notes] = await Promise.all([
    api("GET", `/v1/conversations/${id}`),
    api("GET", `/v1/conversations/${id}/messages?limit=50`),
    api("GET", `/v1/conversations/${id}/notes?limit=50`)
  ])
  if (inbox.open?.id !== id) return
  inbox.open = c
  $("thread-title").textContent = `${contactName(c)}${c.contact?.name ? ` (${c.contact.phone_number})` : ""}`
  $("thread-status").replaceChildren(badge(c.status))
  $("thread-toggle").textContent = c.status === "closed" ? "Reopen conversation" : "Close conversation"
  const assignee = $("thread-assignee")
  // a live refresh never pulls the list from under someone choosing in it
  if (document.activeElement !== assignee) renderAssignee(assignee, c)
  // oldest at the top, as a chat reads; a reaction shows on the message it reacts to
  const chronological = [...messages.data].reverse()
  const byId = new Map(chronological.map((m) => [m.id, m]))
  const reactions = reactionsOf(chronological)
  keyed($("thread-messages"), chronological.filter((m) => !reactions.hidden.has(m.id)), (m) => m.id,
    (m) => JSON.stringify([m.status, m.media?.status, reactions.on.get(m.id), summary(byId.get(m.context?.reply_to))]),
    (m) => el("li", { class: m.direction === "inbound" ? "in" : "out", "data-message": m.id, "data-type": m.type ?? "text" },
      el("span", { class: "muted", text: `${m.direction === "inbound" ? "They" : "You"} · ${when(m.created_at)} ` }),
      m.direction === "outbound" ? badge(m.status) : "",
      ...messageContent(m, byId, reactions.on.get(m.id) ?? [])))
  $("notes").replaceChildren(...notes.data.map((n) =>
    el("li", {}, el("span", { class: "muted", text: `${when(n.created_at)} ` }), n.body)))
  if (notes.data.length === 0) $("notes").append(el("li", { class: "muted", text: "No notes." }))
}

function renderAssignee(assignee, c) {
  const others = inbox.members.filter((m) => m.id !== inbox.me.id)
  assignee.replaceChildren(el("option", { value: "", text: "Nobody" }), el("option", { value: inbox.me.id, text: `Me (${inbox.me.email})` }),
    ...others.map((m) => el("option", { value: m.id, text: `${m.name} (${m.email})` })))
  // someone who left the workspace since stays shown as the assignee until it changes
  if (c.assignee_id && c.assignee_id !== inbox.me.id && !others.some((m) => m.id === c.assignee_id)) {
    assignee.append(el("option", { value: c.assignee_id, text: `A former member (${c.assignee_id})` }))
  }
  assignee.value = c.assignee_id ?? ""
}

$("reply-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("reply-error", null)
  const c = inbox.open
  try {
    await api("POST", `/v1/conversations/${c.id}/messages`, { text: { body: $("reply-text").value } }, await keyFor(c.channel_id))
    $("reply-text").value = ""
    await renderThread(c.id)
  } catch (err) {
    formError("reply-error", err)
  }
})

/** The kinds that carry a caption (docs/API.md "Messages"). */
const CAPTIONED = new Set(["image", "video", "document"])
/** The kinds' size limits as the server holds them (`MEDIA_LIMIT_BYTES`, through media-types.mjs). */
const LIMITS = ["image", "video", "audio", "sticker", "document"].map((k) => `${k} ${size(limitBytes(k))}`).join(", ")

// A file: uploaded (POST /v1/media, its bytes as the body), then sent by its media id as the kind
// the upload was stored as, with the caption where the kind takes one.
$("attach-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("attach-error", null)
  const c = inbox.open
  const file = $("attach-file").files[0]
  if (!file) return
  const status = $("attach-status")
  try {
    const key = await keyFor(c.channel_id)
    status.textContent = `Uploading ${file.name}…`
    const media = await api("POST", `/v1/media?filename=${encodeURIComponent(file.name)}`, undefined, {
      ...key,
      raw: { file, type: normalize(file.type) || "application/octet-stream" }
    })
    const caption = $("attach-caption").value
    const content = { media_id: media.id }
    if (caption && CAPTIONED.has(media.kind)) content.caption = caption
    if (media.kind === "document") content.filename = file.name
    status.textContent = `Sending ${file.name}…`
    await api("POST", `/v1/conversations/${c.id}/messages`, { [media.kind]: content }, key)
    $("attach-form").reset()
    status.textContent = `Sent ${file.name}.`
    await renderThread(c.id)
  } catch (err) {
    status.textContent = ""
    if (err instanceof TypeError) {
      // the server refuses a file over its limit before reading it and closes the connection
      $("attach-error").textContent = `The upload was cut off: is the file over its limit (${LIMITS})?`
      $("attach-error").hidden = false
    } else formError("attach-error", err)
  }
})

$("note-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("note-error", null)
  try {
    await api("POST", `/v1/conversations/${inbox.open.id}/notes`, { body: $("note-text").value })
    $("note-text").value = ""
    await renderThread(inbox.open.id)
  } catch (err) {
    formError("note-error", err)
  }
})

$("thread-assignee").addEventListener("change", async (event) => {
  await patch({ assignee_id: event.target.value === "" ? null : event.target.value })
})

$("thread-toggle").addEventListener("click", async () => {
  await patch({ status: inbox.open.status === "closed" ? "open" : "closed" })
})

async function patch(body) {
  formError("reply-error", null)
  try {
    await api("PATCH", `/v1/conversations/${inbox.open.id}`, body)
    await refreshInbox()
  } catch (err) {
    $("reply-error").textContent = explain(err)
    $("reply-error").hidden = false
  }
}
