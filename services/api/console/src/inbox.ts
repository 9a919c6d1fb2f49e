/**
 * The inbox (docs/CONSOLE.md "Inbox"): conversations with unread counts, newest first, polled
 * every 3 s (new conversations and messages appear, counts move); a conversation's thread with
 * every kind (media.ts; read marker moved on opening and when a message arrives while it is
 * open), reply with text or a file, internal notes, assign to any member of the workspace, close
 * and reopen. Each row names the contact (or the number), the channel, the last message and its time.
 * A group chat's conversation (docs/API.md "Group chats") is named by its subject, each of its
 * messages by the participant who wrote; a reply goes to the group chat.
 */
import { ConsoleMedia, ConversationStateMachine } from "@switchboard/domain"
import { uploadMedia } from "@switchboard/sdk"
import { Schema } from "effect"
import type { Answer, Channel, Conversation, ConversationListed, GroupChat, Member, Request, User } from "./lib.js"
import {
  $,
  api,
  apiBase,
  badge,
  callerFor,
  el,
  explain,
  formError,
  pollAgain,
  shortWhen,
  state,
  unanswered,
  views,
  when
} from "./lib.js"
import { keyed, messageContent, preview, reactionsOf, size, summary } from "./media.js"

const inbox: {
  open: { readonly id: Conversation["id"] } | Conversation | null
  me: User | null
  members: ReadonlyArray<Member>
  channels: Map<string, Channel>
  channelsOf: string | null
  tried: Set<string>
  /** the group chats of the conversations shown (subject, participants), read once each per visit */
  groups: Map<string, GroupChat>
} = { open: null, me: null, members: [], channels: new Map(), channelsOf: null, tried: new Set(), groups: new Map() }

/** Reads the group chats of these conversations not read yet (a group chat's subject and participants). */
async function loadGroupChats(conversations: ReadonlyArray<ConversationListed>) {
  const missing = [...new Set(conversations.flatMap((c) => c.group_chat_id ?? []))].filter((id) =>
    !inbox.groups.has(id)
  )
  await Promise.all(missing.map(async (groupChatId) => {
    const chat = await api.groupChats.get({ path: { groupChatId } }).catch(() => undefined)
    if (chat) inbox.groups.set(groupChatId, chat)
  }))
}

/** Who wrote a group chat's message: the participant's number (or LID), as the group chat lists them. */
const writerOf = (
  m: { readonly contact_id: string | null; readonly from: string | null },
  chat: GroupChat | undefined
) => m.from ?? chat?.participants.find((p) => p.contact_id === m.contact_id)?.whatsapp_lid ?? "A participant"

const isStatus = Schema.is(ConversationStateMachine.ConversationStatus)

views.set("inbox", async () => {
  if (!inbox.me) inbox.me = (await api.session.me({})).user
  // who a conversation can be assigned to: the workspace's members (read again on each visit)
  inbox.members = (await api.session.members({ urlParams: { limit: 100 } })).data
  await loadChannelNames()
  inbox.groups.clear()
  await refreshInbox()
})

$("inbox-status").addEventListener("change", () => refreshInbox())

/** The workspace's channels by id, archived ones included (an ended sandbox session's thread stays). */
async function loadChannelNames() {
  const page = await api.channels.list({ urlParams: { limit: 100 } })
  inbox.channels = new Map(page.data.map((ch) => [ch.id, ch]))
  if (inbox.channelsOf !== state.workspace) inbox.tried.clear()
  inbox.channelsOf = state.workspace
}

/** The contact as a person reads it: the name, else the number, else what WhatsApp leaves us. */
const contactName = (c: ConversationListed | Conversation) =>
  c.group_chat_id !== undefined
    ? `Group: ${inbox.groups.get(c.group_chat_id)?.subject || "a group chat"}`
    : c.contact
    ? c.contact.name ?? c.contact.phone_number ?? "A contact whose number WhatsApp hides"
    : "Deleted contact"

/** The channel a conversation is on: its name, and its number when it has one. */
function channelLabel(c: ConversationListed) {
  const ch = inbox.channels.get(c.channel_id)
  if (!ch) return "a channel"
  const number = ch.phone_number && !ch.name.includes(ch.phone_number) ? ` (${ch.phone_number})` : ""
  return `${ch.name}${number}${ch.status === "archived" ? ", archived" : ""}`
}

/** One conversation in the list: who, on which channel, the last message and when. */
function conversationRow(c: ConversationListed) {
  const unread = c.unread_count > 0 ? el("span", { class: "unread", text: `${c.unread_count} unread` }) : ""
  const last = c.last_message
  const at = last?.created_at ?? c.last_message_at
  const number = c.contact?.name && c.contact.phone_number
    ? el("span", { class: "muted", text: ` ${c.contact.phone_number}` })
    : ""
  const open = el(
    "button",
    {
      type: "button",
      class: "conversation",
      "aria-current": inbox.open?.id === c.id ? "true" : "false",
      onclick: () => openConversation(c.id)
    },
    el(
      "span",
      { class: "conv-top" },
      el("span", { class: "conv-who" }, el("strong", { text: contactName(c) }), number),
      at ? el("time", { class: "muted conv-time", datetime: at, title: when(at), text: shortWhen(at) }) : ""
    ),
    el("span", { class: "conv-channel muted", text: `${channelLabel(c)}${c.status === "closed" ? " · closed" : ""}` }),
    el(
      "span",
      { class: "conv-bottom" },
      el("span", {
        class: "conv-preview",
        text: last ? `${last.direction === "outbound" ? "You: " : ""}${preview(last)}` : "No messages yet."
      }),
      unread
    )
  )
  return el("li", { "data-conversation": c.id }, open)
}

async function refreshInbox(): Promise<void> {
  try {
    const status = $<HTMLSelectElement>("inbox-status").value
    const page = await api.conversations.list({
      urlParams: { limit: 50, ...(isStatus(status) ? { status } : {}) }
    })
    formError("inbox-error", null)
    // rows that did not change are kept, so a refresh never takes the keyboard focus away
    // a channel created since the list was read (a new sandbox session) is read again by name
    const unknown = page.data.filter((c) => !inbox.channels.has(c.channel_id) && !inbox.tried.has(c.channel_id))
    if (inbox.channelsOf !== state.workspace || unknown.length > 0) {
      for (const c of unknown) inbox.tried.add(c.channel_id)
      await loadChannelNames()
    }
    await loadGroupChats(page.data)
    keyed(
      $("conversations"),
      page.data,
      (c) => c.id,
      (c) =>
        JSON.stringify([
          contactName(c),
          channelLabel(c),
          c.unread_count,
          c.status,
          c.last_message_at,
          c.last_message?.id,
          c.last_message?.status,
          inbox.open?.id === c.id
        ]),
      conversationRow
    )
    if (page.data.length === 0) {
      $("conversations").replaceChildren(el("li", { class: "muted", text: "No conversations." }))
    }
    const total = page.data.reduce((n, c) => n + c.unread_count, 0)
    $("inbox-unread").textContent = total > 0 ? `${total} unread` : ""
    const open = inbox.open
    const shown = open && page.data.find((c) => c.id === open.id)
    // a message that arrives in the conversation someone is looking at is read there and then
    if (shown && shown.unread_count > 0 && document.visibilityState === "visible") {
      await api.conversations.markRead({ path: { conversationId: shown.id } }).catch(() => {})
      return refreshInbox()
    }
    if (open) await renderThread(open.id)
  } catch (err) {
    formError("inbox-error", err)
  }
  pollAgain("inbox", refreshInbox, 3000)
}

async function openConversation(id: Conversation["id"]) {
  inbox.open = { id }
  await api.conversations.markRead({ path: { conversationId: id } }).catch(() => {})
  await renderThread(id)
  $("thread").hidden = false
  $("thread-title").focus()
  await refreshInbox()
}

async function renderThread(id: Conversation["id"]) {
  const [c, messages, notes] = await Promise.all([
    api.conversations.get({ path: { conversationId: id } }),
    api.conversations.messages({ path: { conversationId: id }, urlParams: { limit: 50 } }),
    api.conversations.notes({ path: { conversationId: id }, urlParams: { limit: 50 } })
  ])
  if (inbox.open?.id !== id) return
  inbox.open = c
  const group = c.group_chat_id === undefined ? undefined : inbox.groups.get(c.group_chat_id)
  $("thread-title").textContent = group
    ? `${contactName(c)} (${group.participant_count} participants)`
    : `${contactName(c)}${c.contact?.name ? ` (${c.contact.phone_number})` : ""}`
  $("thread-status").replaceChildren(badge(c.status))
  $("thread-toggle").textContent = c.status === "closed" ? "Reopen conversation" : "Close conversation"
  const assignee = $<HTMLSelectElement>("thread-assignee")
  // a live refresh never pulls the list from under someone choosing in it
  if (document.activeElement !== assignee) renderAssignee(assignee, c)
  // oldest at the top, as a chat reads; a reaction shows on the message it reacts to
  const chronological = [...messages.data].reverse()
  const byId = new Map<string, (typeof chronological)[number]>(chronological.map((m) => [m.id, m]))
  const reactions = reactionsOf(chronological)
  keyed(
    $("thread-messages"),
    chronological.filter((m) => !reactions.hidden.has(m.id)),
    (m) => m.id,
    (m) =>
      JSON.stringify([
        m.status,
        m.media?.status,
        reactions.on.get(m.id),
        summary(m.context?.reply_to ? byId.get(m.context.reply_to) : undefined)
      ]),
    (m) =>
      el(
        "li",
        { class: m.direction === "inbound" ? "in" : "out", "data-message": m.id, "data-type": m.type ?? "text" },
        el("span", {
          class: "muted",
          text: `${
            m.direction === "outbound" ? "You" : c.group_chat_id === undefined ? "They" : writerOf(m, group)
          } · ${when(m.created_at)} `
        }),
        m.direction === "outbound" ? badge(m.status) : "",
        ...messageContent(m, byId, reactions.on.get(m.id) ?? [])
      )
  )
  $("notes").replaceChildren(
    ...notes.data.map((n) => el("li", {}, el("span", { class: "muted", text: `${when(n.created_at)} ` }), n.body))
  )
  if (notes.data.length === 0) $("notes").append(el("li", { class: "muted", text: "No notes." }))
}

/** Who can be chosen as the assignee: me, the other members, and a former member still assigned. */
function renderAssignee(assignee: HTMLSelectElement, c: Conversation) {
  const me = inbox.me
  if (!me) return
  const others = inbox.members.filter((m) => m.id !== me.id)
  assignee.replaceChildren(
    el("option", { value: "", text: "Nobody" }),
    el("option", { value: me.id, text: `Me (${me.email})` }),
    ...others.map((m) => el("option", { value: m.id, text: `${m.name} (${m.email})` }))
  )
  // someone who left the workspace since stays shown as the assignee until it changes
  if (c.assignee_id && c.assignee_id !== me.id && !others.some((m) => m.id === c.assignee_id)) {
    assignee.append(el("option", { value: c.assignee_id, text: `A former member (${c.assignee_id})` }))
  }
  assignee.value = c.assignee_id ?? ""
}

/** The conversation open in the thread, once it was read (its channel, status and assignee known). */
const openConversationRead = (): Conversation | null => inbox.open && "channel_id" in inbox.open ? inbox.open : null

$("reply-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("reply-error", null)
  const c = openConversationRead()
  if (!c) return
  try {
    const { client } = await callerFor(c.channel_id)
    await client.conversations.reply({
      path: { conversationId: c.id },
      payload: { text: { body: $<HTMLTextAreaElement>("reply-text").value } },
      headers: {}
    })
    $<HTMLTextAreaElement>("reply-text").value = ""
    await renderThread(c.id)
  } catch (err) {
    formError("reply-error", err)
  }
})

type MediaKind = Answer<"media", "get">["kind"]
type Reply = Request<"conversations", "reply">["payload"]

/** The reply that sends an uploaded file as the kind it was stored as, with the caption where the kind takes one. */
function fileReply(kind: MediaKind, media_id: Answer<"media", "get">["id"], caption: string, filename: string): Reply {
  const captioned = caption ? { caption } : {}
  switch (kind) {
    case "image":
      return { image: { media_id, ...captioned } }
    case "video":
      return { video: { media_id, ...captioned } }
    case "document":
      return { document: { media_id, ...captioned, filename } }
    case "audio":
      return { audio: { media_id } }
    case "sticker":
      return { sticker: { media_id } }
  }
}

/** The kinds' size limits as the server holds them (`MEDIA_LIMIT_BYTES`, through the domain's reader). */
const LIMITS = (["image", "video", "audio", "sticker", "document"] as const).map((k) =>
  `${k} ${size(ConsoleMedia.limitBytes(k))}`
).join(", ")

// A file: uploaded (POST /v1/media, its bytes as the body), then sent by its media id as the kind
// the upload was stored as, with the caption where the kind takes one.
$("attach-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("attach-error", null)
  const c = openConversationRead()
  const file = $<HTMLInputElement>("attach-file").files?.[0]
  if (!c || !file) return
  const status = $("attach-status")
  try {
    const caller = await callerFor(c.channel_id)
    status.textContent = `Uploading ${file.name}…`
    const media = await uploadMedia({ baseUrl: apiBase, fetch: caller.fetch }, {
      file,
      contentType: ConsoleMedia.normalize(file.type) || "application/octet-stream",
      filename: file.name
    })
    status.textContent = `Sending ${file.name}…`
    await caller.client.conversations.reply({
      path: { conversationId: c.id },
      payload: fileReply(media.kind, media.id, $<HTMLInputElement>("attach-caption").value, file.name),
      headers: {}
    })
    $<HTMLFormElement>("attach-form").reset()
    status.textContent = `Sent ${file.name}.`
    await renderThread(c.id)
  } catch (err) {
    status.textContent = ""
    if (unanswered(err)) {
      // the server refuses a file over its limit before reading it and closes the connection
      $("attach-error").textContent = `The upload was cut off: is the file over its limit (${LIMITS})?`
      $("attach-error").hidden = false
    } else formError("attach-error", err)
  }
})

$("note-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("note-error", null)
  const c = inbox.open
  if (!c) return
  try {
    await api.conversations.addNote({
      path: { conversationId: c.id },
      payload: { body: $<HTMLTextAreaElement>("note-text").value }
    })
    $<HTMLTextAreaElement>("note-text").value = ""
    await renderThread(c.id)
  } catch (err) {
    formError("note-error", err)
  }
})

/**
 * The assignee's writes, one at a time: arrow keys on the select change it at every step, and two
 * writes in flight at once could land in either order, leaving the step before the last. Each
 * write sends what the select shows when its turn comes, so the last choice lands last.
 */
let assigneeWrites: Promise<void> = Promise.resolve()

$("thread-assignee").addEventListener("change", (event) => {
  const select = event.target as HTMLSelectElement
  assigneeWrites = assigneeWrites.then(async () => {
    const chosen = select.value
    const c = openConversationRead()
    const candidates = [
      ...(inbox.me ? [inbox.me.id] : []),
      ...inbox.members.map((m) => m.id),
      ...(c?.assignee_id ? [c.assignee_id] : [])
    ]
    await patch({ assignee_id: candidates.find((id) => id === chosen) ?? null })
  })
})

$("thread-toggle").addEventListener("click", async () => {
  const c = openConversationRead()
  if (c) await patch({ status: c.status === "closed" ? "open" : "closed" })
})

async function patch(body: Request<"conversations", "update">["payload"]) {
  formError("reply-error", null)
  const c = inbox.open
  if (!c) return
  try {
    await api.conversations.update({ path: { conversationId: c.id }, payload: body })
    await refreshInbox()
  } catch (err) {
    $("reply-error").textContent = explain(err)
    $("reply-error").hidden = false
  }
}
