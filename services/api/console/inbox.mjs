// The inbox (docs/CONSOLE.md "Console"): conversations with unread counts, newest first, refreshed every
// 3 s; a conversation's thread (read marker moved on opening), reply, internal notes, assign to
// yourself or nobody, close and reopen.
import { $, api, badge, el, explain, formError, keyFor, pollAgain, views, when } from "./lib.mjs"
import { keyed, messageContent, reactionsOf, summary } from "./media.mjs"

const inbox = { open: null, me: null }

views.set("inbox", async () => {
  if (!inbox.me) inbox.me = (await api("GET", "/v1/auth/me")).user
  await refreshInbox()
})

$("inbox-status").addEventListener("change", () => refreshInbox())

const contactName = (c) => c.contact ? c.contact.name ?? c.contact.phone_number : "Deleted contact"

async function refreshInbox() {
  try {
    const status = $("inbox-status").value
    const page = await api("GET", `/v1/conversations?limit=50${status ? `&status=${status}` : ""}`)
    $("conversations").replaceChildren(...page.data.map((c) => {
      const unread = c.unread_count > 0 ? el("span", { class: "unread", text: `${c.unread_count} unread` }) : ""
      const open = el("button", {
        type: "button",
        class: "conversation",
        "aria-current": inbox.open?.id === c.id ? "true" : "false",
        onclick: () => openConversation(c.id)
      }, el("strong", { text: contactName(c) }), " ", unread,
        el("span", { class: "muted", text: ` ${c.status} · ${when(c.last_message_at)}` }))
      return el("li", { "data-conversation": c.id }, open)
    }))
    if (page.data.length === 0) $("conversations").append(el("li", { class: "muted", text: "No conversations." }))
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
  assignee.replaceChildren(el("option", { value: "", text: "Nobody" }), el("option", { value: inbox.me.id, text: `Me (${inbox.me.email})` }))
  if (c.assignee_id && c.assignee_id !== inbox.me.id) assignee.append(el("option", { value: c.assignee_id, text: c.assignee_id }))
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
