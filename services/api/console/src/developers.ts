/**
 * API keys and the sandbox (docs/CONSOLE.md "Console"): create a key and see its secret once,
 * revoke one; open a sandbox session, verify a recipient with its code, simulate a message from
 * them, end it.
 */
import { ConsoleMedia, Identity } from "@switchboard/domain"
import { Schema } from "effect"
import type { Answer, Channel, Request } from "./lib.js"
import {
  $,
  api,
  badge,
  cell,
  confirmDialog,
  el,
  explain,
  formError,
  refusedWith,
  sandbox,
  secretBox,
  state,
  testKey,
  views,
  when
} from "./lib.js"

type ApiKey = Answer<"apiKeys", "list">["data"][number]
type Session = Answer<"sandbox", "get">

/** Verification codes of sessions this page opened: shown once by the API, kept while the page lives. */
const codes = new Map<string, string>()

views.set("developers", async () => {
  // a secret shown once is gone once the page moves on
  $("key-secret").hidden = true
  $("key-secret").replaceChildren()
  // the sessions drawn on the last visit go at once: a form typed into while the list reloads
  // would be replaced by an empty one, and its submit would send nothing
  $("sandbox-sessions").replaceChildren(el("p", { class: "muted", text: "Loading sandbox sessions…" }))
  await loadKeys()
  await loadSessions()
})

// ---- API keys ------------------------------------------------------------------------------

/** A key's state as the server judges it: revoked, expired (its `expires_at` passed) or active. */
export function keyState(k: ApiKey, now = Date.now()) {
  if (k.revoked_at !== null) return { status: "revoked", line: `revoked ${when(k.revoked_at)}` }
  if (k.expires_at !== null && new Date(k.expires_at).getTime() <= now) {
    return { status: "expired", line: `expired ${when(k.expires_at)}` }
  }
  return { status: "active", line: k.expires_at !== null ? `expires ${when(k.expires_at)}` : "no expiry" }
}

async function loadKeys() {
  const page = await api.apiKeys.list({ urlParams: { limit: 100 } })
  const rows = page.data.map((k) => {
    const { line, status } = keyState(k)
    // only an active key can be revoked: an expired or revoked one is refused already
    const revoke = status === "active"
      ? el("button", { type: "button", class: "danger", onclick: () => revokeKey(k), text: `Revoke ${k.name}` })
      : el("span", { class: "muted", text: "—" })
    return el(
      "tr",
      { "data-key": k.id, "data-key-status": status },
      cell("Name", el("strong", { text: k.name })),
      cell("Key", el("code", { text: `${k.prefix}_…${k.last4}` })),
      cell("Mode", k.mode),
      cell("Status", badge(status), el("div", { class: "muted", text: line })),
      cell("Scopes", el("span", { class: "muted", text: k.scopes.join(", ") })),
      cell("Last used", k.last_used_at ? when(k.last_used_at) : "never"),
      cell("Actions", revoke)
    )
  })
  const body = $<HTMLTableElement>("keys").tBodies[0]!
  body.replaceChildren(...rows)
  if (rows.length === 0) body.append(el("tr", {}, el("td", { colspan: "7", text: "No API keys yet." })))
}

const isKeyMode = Schema.is(Identity.KeyMode)

$("key-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("key-error", null)
  try {
    const mode = $<HTMLSelectElement>("key-mode").value
    // the form's choices are the contract's modes
    if (!isKeyMode(mode)) throw new Error(`not a key mode: ${mode}`)
    const created = await api.apiKeys.create({ payload: { name: $<HTMLInputElement>("key-name").value.trim(), mode } })
    $<HTMLInputElement>("key-name").value = ""
    $("key-secret").replaceChildren(secretBox(`API key ${created.name}`, created.secret))
    $("key-secret").hidden = false
    await loadKeys()
    $("key-secret").querySelector("button")?.focus()
  } catch (err) {
    formError("key-error", err)
  }
})

async function revokeKey(k: ApiKey) {
  if (!(await confirmDialog(`Revoke ${k.name}? Programs using it are refused from now on.`, "Revoke"))) return
  try {
    await api.apiKeys.revoke({ path: { keyId: k.id } })
    if (state.testKey?.id === k.id) state.testKey = null
    $("key-secret").hidden = true
    await loadKeys()
  } catch (err) {
    formError("key-error", err)
  }
}

// ---- sandbox -------------------------------------------------------------------------------

/** Sessions are read with the page's test key: listed once the page has one (it makes one on "Open"). */
async function loadSessions() {
  const list = $("sandbox-sessions")
  if (!state.testKey || state.testKey.workspace !== state.workspace) {
    // sandbox routes take a test-mode key only (the page has none yet): the workspace's sandbox
    // channels say whether a session is open, opened by the quickstart, a program or before a reload
    const channels = (await api.channels.list({ urlParams: { limit: 100 } })).data
      .filter((c) => c.provider === "sandbox" && c.status !== "archived")
    list.replaceChildren(...channels.map(openElsewhereCard))
    if (channels.length === 0) list.append(el("p", { class: "muted", text: "No active sandbox session." }))
    return
  }
  const page = await sandbox.client.sandbox.list({ urlParams: { status: "active" } })
  list.replaceChildren(...page.data.map(sessionCard))
  if (page.data.length === 0) list.append(el("p", { class: "muted", text: "No active sandbox session." }))
}

/**
 * A session this page did not open (its verification code is not known here): its number, and a
 * button that makes the page's test key to verify recipients, simulate messages or end it here.
 */
function openElsewhereCard(channel: Channel) {
  const error = el("p", { class: "error", role: "alert", hidden: "" })
  const manage = el("button", {
    type: "button",
    text: `Manage session ${channel.phone_number ?? channel.name} here`,
    onclick: async () => {
      error.hidden = true
      try {
        await testKey()
        await loadSessions()
        // the "Console sandbox" key it just created is listed at once
        await loadKeys()
      } catch (err) {
        error.textContent = explain(err)
        error.hidden = false
      }
    }
  })
  return el(
    "article",
    { class: "card", "data-session-channel": channel.id, "aria-labelledby": `session-title-${channel.id}` },
    el("h4", { id: `session-title-${channel.id}`, text: `Sandbox number ${channel.phone_number ?? channel.name}` }),
    el(
      "p",
      {},
      badge("active"),
      " A session is open in this workspace, opened outside this page (by the quickstart, a program, or before this page was reloaded)."
    ),
    el("p", {
      class: "muted",
      text:
        "Sandbox routes take a test-mode API key: this page makes its own (“Console sandbox”) to show the session’s recipients, simulate their messages and end it. Its verification code was shown once, to whoever opened it."
    }),
    manage,
    error
  )
}

$("sandbox-open").addEventListener("click", async () => {
  formError("sandbox-error", null)
  try {
    await testKey()
    const session = await sandbox.client.sandbox.create({})
    codes.set(session.id, session.verification.code)
    await loadSessions()
    // the "Console sandbox" key it may just have created is listed at once
    await loadKeys()
    document.getElementById(`verify-phone-${session.id}`)?.focus()
  } catch (err) {
    formError("sandbox-error", err)
    if (refusedWith(err, "ENTITLEMENT_LIMIT_REACHED")) {
      $("sandbox-error").textContent += " End the active session below to open a new one."
    }
    await loadSessions().catch(() => {})
  }
})

const field = (id: string) => $<HTMLInputElement>(id)

function sessionCard(s: Session) {
  const id = s.id
  const code = codes.get(id)
  const recipients = s.verified_recipients
  const verify = el(
    "form",
    { class: "inline", id: `verify-${id}` },
    el("label", {
      for: `verify-phone-${id}`,
      text: "Recipient to verify (a +country number; simulated, it receives nothing)"
    }),
    el("input", {
      id: `verify-phone-${id}`,
      type: "tel",
      required: "",
      placeholder: "+4915112345678",
      autocomplete: "tel"
    }),
    el("label", { for: `verify-code-${id}`, text: "Verification code" }),
    el("input", { id: `verify-code-${id}`, inputmode: "numeric", required: "", maxlength: "16" }),
    el("button", { type: "submit", text: "Verify recipient" }),
    el("p", { id: `verify-error-${id}`, class: "error", role: "alert", hidden: "" })
  )
  if (code) verify.querySelector<HTMLInputElement>(`#verify-code-${id}`)!.value = code
  verify.addEventListener("submit", async (event) => {
    event.preventDefault()
    formError(`verify-error-${id}`, null)
    try {
      await sandbox.client.sandbox.verify({
        path: { sessionId: id },
        payload: {
          phone_number: field(`verify-phone-${id}`).value.trim(),
          code: field(`verify-code-${id}`).value.trim()
        }
      })
      await loadSessions()
    } catch (err) {
      formError(`verify-error-${id}`, err)
    }
  })
  const card = el(
    "article",
    { class: "card", "data-session": id, "aria-labelledby": `session-title-${id}` },
    el("h4", { id: `session-title-${id}`, text: `Sandbox number ${s.phone_number}` }),
    el("p", {}, badge(s.status), ` until ${when(s.expires_at)}`),
    code
      ? el(
        "p",
        {},
        "Verification code: ",
        el("strong", { class: "code", text: code }),
        el("span", { class: "muted", text: " (shown once: it stays on this page until you leave)" })
      )
      : "",
    el("p", {
      text: recipients.length
        ? `Verified recipients: ${recipients.join(", ")}`
        : "No verified recipient yet: verify a number with the code above to send to it (simulated: nothing reaches a phone)."
    }),
    verify
  )
  if (recipients.length > 0) card.append(inboundForm(s))
  card.append(
    el("button", {
      type: "button",
      class: "danger",
      onclick: () => endSession(s),
      text: `End session ${s.phone_number}`
    })
  )
  return card
}

async function base64Of(file: File) {
  const bytes = new Uint8Array(await file.arrayBuffer())
  let binary = ""
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}

type Inbound = Request<"sandbox", "inbound">["payload"]

/** A file a simulated contact sends, as the kind the project's media-type reader decides (as the server would). */
async function inboundFile(from: string, file: File, text: string): Promise<Inbound> {
  // a .mov or a GIF is a document: the video and image kinds do not take them
  const mime_type = ConsoleMedia.normalize(file.type) || "application/octet-stream"
  const inline = { data_base64: await base64Of(file), mime_type }
  const captioned = text ? { caption: text } : {}
  switch (ConsoleMedia.kindOfFile(mime_type)) {
    case "image":
      return { from, image: { ...inline, ...captioned } }
    case "video":
      return { from, video: { ...inline, ...captioned } }
    case "document":
      return { from, document: { ...inline, filename: file.name, ...captioned } }
    case "audio":
      return { from, audio: inline }
    case "sticker":
      return { from, sticker: inline }
  }
}

/**
 * The simulated network: a verified recipient writes to the sandbox number (it lands in the
 * inbox), a text or a file (inline, at most 1 MiB: the sandbox's limit) with the text as caption.
 */
function inboundForm(s: Session) {
  const id = s.id
  const form = el(
    "form",
    { class: "inline", id: `inbound-${id}` },
    el("label", { for: `inbound-from-${id}`, text: "Simulate a message from" }),
    el(
      "select",
      { id: `inbound-from-${id}` },
      ...s.verified_recipients.map((p) => el("option", { value: p, text: p }))
    ),
    el("label", { for: `inbound-text-${id}`, text: "Their text" }),
    el("input", { id: `inbound-text-${id}`, maxlength: "1024" }),
    el("label", {
      for: `inbound-file-${id}`,
      text: "Or a file they send (picture, audio, video, document; at most 1 MiB; the text is its caption)"
    }),
    el("input", { id: `inbound-file-${id}`, type: "file" }),
    el("button", { type: "submit", text: "Simulate inbound message" }),
    el("p", { id: `inbound-status-${id}`, class: "muted", role: "status" })
  )
  form.addEventListener("submit", async (event) => {
    event.preventDefault()
    const status = $(`inbound-status-${id}`)
    const text = field(`inbound-text-${id}`).value
    const file = field(`inbound-file-${id}`).files?.[0]
    if (!text && !file) {
      status.textContent = "Write their text or choose a file."
      return
    }
    const from = $<HTMLSelectElement>(`inbound-from-${id}`).value
    status.textContent = "Sending…"
    try {
      const payload: Inbound = file ? await inboundFile(from, file, text) : { from, text: { body: text } }
      await sandbox.client.sandbox.inbound({ path: { sessionId: id }, payload })
      form.reset()
      status.textContent = "Received: see the Inbox."
    } catch (err) {
      status.textContent = explain(err)
    }
  })
  return form
}

async function endSession(s: Session) {
  if (!(await confirmDialog(`End the sandbox session on ${s.phone_number}? Its channel is archived.`, "End session"))) {
    return
  }
  try {
    await sandbox.client.sandbox.revoke({ path: { sessionId: s.id } })
    codes.delete(s.id)
    await loadSessions()
  } catch (err) {
    formError("sandbox-error", err)
  }
}
