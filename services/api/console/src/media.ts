/**
 * A message's content by its kind (docs/CONSOLE.md "Messages and media"; the kinds: docs/API.md
 * "Messages"): text, images and stickers inline, audio and video players, documents as a download
 * link with name and size, locations with a map link, shared contacts, edits and deletions, the
 * quoted message of a reply and the reactions on the message they react to, calls (missed,
 * rejected, answered on the phone with their length). A file is read with the signed-in user's
 * token into a blob URL (never a token in a URL), once per media.
 */
import type { Message } from "./lib.js"
import { el, messageText, pathOf, userFetch } from "./lib.js"

/** media id -> Promise of its object URL; kept while the page lives, revoked on sign-out. */
const blobs = new Map<string, Promise<string>>()

type MediaId = NonNullable<Message["media"]>["id"]

/** `GET /v1/media/{id}/content` as the signed-in user: the bytes, not JSON, so read raw. */
async function fetchContent(mediaId: MediaId) {
  const r = await userFetch(pathOf("media", "content", { mediaId }))
  if (!r.ok) throw new Error(`HTTP ${r.status}`)
  return URL.createObjectURL(await r.blob())
}

export function mediaUrl(id: MediaId) {
  let url = blobs.get(id)
  if (!url) {
    url = fetchContent(id)
    // a failed read is tried again on the next render
    url.catch(() => blobs.delete(id))
    blobs.set(id, url)
  }
  return url
}

/** Frees every file read so far (sign-out, another workspace). */
export function forgetMedia() {
  for (const url of blobs.values()) url.then((u) => URL.revokeObjectURL(u), () => {})
  blobs.clear()
}

export function size(bytes: number | null | undefined) {
  if (typeof bytes !== "number") return ""
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

type FileKind = "image" | "video" | "audio" | "sticker" | "document"
const KIND_NAMES: Record<FileKind, string> = {
  image: "Image",
  video: "Video",
  audio: "Audio",
  sticker: "Sticker",
  document: "Document"
}
const KIND_ICONS: Record<FileKind, string> = { image: "🖼", video: "🎬", audio: "🎵", sticker: "🏷", document: "📄" }

/** The file a message of a media kind carries, its kind's own members read alike. */
interface FileView {
  readonly kind: FileKind
  readonly mediaId: MediaId | null
  readonly caption: string | null
  readonly filename: string | null
  readonly sizeBytes: number | null
  readonly voice: boolean
}

const fileOf = (m: Message): FileView | undefined => {
  switch (m.type) {
    case "image":
    case "video":
    case "sticker": {
      const f = m[m.type]
      return {
        kind: m.type,
        mediaId: f?.media_id ?? null,
        caption: f?.caption ?? null,
        filename: null,
        sizeBytes: f?.size_bytes ?? null,
        voice: false
      }
    }
    case "audio":
      return {
        kind: "audio",
        mediaId: m.audio?.media_id ?? null,
        caption: m.audio?.caption ?? null,
        filename: null,
        sizeBytes: m.audio?.size_bytes ?? null,
        voice: m.audio?.voice ?? false
      }
    case "document":
      return {
        kind: "document",
        mediaId: m.document?.media_id ?? null,
        caption: m.document?.caption ?? null,
        filename: m.document?.filename ?? null,
        sizeBytes: m.document?.size_bytes ?? null,
        voice: false
      }
    default:
      return undefined
  }
}

/** The file of an image, sticker, audio, video or document message, by its media's status. */
function file(m: Message, f: FileView) {
  const kind = f.kind
  const status = m.media?.status ?? "ready"
  const id = m.media?.id ?? f.mediaId
  if (status === "pending") {
    return el("p", {
      class: "media-state s-wait",
      "data-media-status": "pending",
      text: `${KIND_NAMES[kind]} arriving…`
    })
  }
  if (status !== "ready" || !id) {
    const why = m.media?.failure_reason ? `: ${String(m.media.failure_reason).replace(/_/g, " ")}` : ""
    return el("p", {
      class: "media-state s-bad",
      "data-media-status": status,
      text: `${KIND_NAMES[kind]} could not be stored${why}`
    })
  }
  if (kind === "document") {
    const name = f.filename ?? "document"
    const link = el("a", { href: "#", class: "download", "data-media": id, text: `${name} (${size(f.sizeBytes)})` })
    link.addEventListener("click", async (event) => {
      event.preventDefault()
      try {
        el("a", { href: await mediaUrl(id), download: name }).click()
      } catch {
        link.after(el("span", { class: "error", role: "alert", text: " The file could not be downloaded." }))
      }
    })
    return el("p", { class: "document" }, "📄 ", link)
  }
  const node = kind === "audio"
    ? el("audio", { class: `media ${kind}`, "data-media": id })
    : kind === "video"
    ? el("video", { class: `media ${kind}`, "data-media": id })
    : el("img", { class: `media ${kind}`, "data-media": id })
  if (node instanceof HTMLImageElement) node.setAttribute("alt", f.caption || KIND_NAMES[kind])
  else {
    node.setAttribute("controls", "")
    node.setAttribute("preload", "metadata")
    node.setAttribute("aria-label", f.voice ? "Voice note" : KIND_NAMES[kind])
  }
  mediaUrl(id).then((url) => {
    node.src = url
  }, () => {
    node.replaceWith(el("p", { class: "media-state s-bad", text: `${KIND_NAMES[kind]} could not be loaded.` }))
  })
  return node
}

function location(l: NonNullable<Message["location"]>) {
  const coords = `${l.latitude}, ${l.longitude}`
  const map =
    `https://www.openstreetmap.org/?mlat=${l.latitude}&mlon=${l.longitude}#map=17/${l.latitude}/${l.longitude}`
  return el(
    "div",
    { class: "location" },
    el("strong", { text: `📍 ${l.name ?? "Location"}` }),
    l.address ? el("div", { text: l.address }) : "",
    el("div", { class: "muted", text: coords }),
    el("a", { href: map, target: "_blank", rel: "noopener noreferrer", text: "Open in map" })
  )
}

const capitalized = (s: string) => `${s[0]!.toUpperCase()}${s.slice(1)}`

/** A call's line: "📞 Missed voice call", "📹 Video call answered on the phone (1:02)". */
export function callLine(call: Message["call"]) {
  const kind = call?.video ? "video call" : "voice call"
  const icon = call?.video ? "📹" : "📞"
  if (call?.status === "rejected") return `${icon} ${capitalized(kind)} rejected`
  if (call?.status === "answered_elsewhere") {
    const s = call.duration_s
    const took = typeof s === "number" ? ` (${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")})` : ""
    return `${icon} ${capitalized(kind)} answered on the phone${took}`
  }
  return `${icon} Missed ${kind}`
}

/** One line for a message quoted or reacted to. */
export function summary(m: Message | undefined) {
  if (!m) return "a message not shown here"
  if (m.type === "call") return callLine(m.call)
  const f = fileOf(m)
  if (m.type === "document") return `📄 ${f?.filename ?? "document"}`
  if (m.type === "location") return `📍 ${m.location?.name ?? "Location"}`
  if (f?.caption) return f.caption
  return messageText(m)
}

/** A message as the one line an inbox row previews: the text, else what kind of message it is. */
export function preview(m: Message | null | undefined) {
  if (!m) return ""
  const f = fileOf(m)
  if (f) {
    const name = f.kind === "audio" && f.voice
      ? "Voice note"
      : f.kind === "document" && f.filename
      ? f.filename
      : KIND_NAMES[f.kind]
    return `${KIND_ICONS[f.kind]} ${f.caption || name}`
  }
  switch (m.type) {
    case "location":
      return `📍 ${m.location?.name ?? "Location"}`
    case "contacts":
      return `👤 ${(m.contacts ?? []).map((c) => c.name).join(", ") || "Contact"}`
    case "reaction":
      return m.reaction?.emoji ? `Reacted ${m.reaction.emoji}` : "Removed a reaction"
    case "edit":
      return `✎ ${m.edit?.text?.body ?? ""}`
    case "revoke":
      return "Deleted a message"
    case "unsupported":
      return `[${m.unsupported?.kind ?? "message"}]`
    default:
      return summary(m)
  }
}

export interface Reaction {
  readonly emoji: string
  readonly by: string
}

const byIdOf = (byId: ReadonlyMap<string, Message>, id: string | null | undefined) => id ? byId.get(id) : undefined

/**
 * What the message shows: `byId` holds the messages around it (for the quoted one), `reactions`
 * the emoji on it as `[{emoji, by}]`.
 */
export function messageContent(
  m: Message,
  byId: ReadonlyMap<string, Message> = new Map(),
  reactions: ReadonlyArray<Reaction> = []
) {
  const parts: Array<HTMLElement> = []
  const quoted = m.context?.reply_to
  if (quoted) parts.push(el("blockquote", { class: "quote", "data-quotes": quoted, text: summary(byId.get(quoted)) }))
  const f = fileOf(m)
  if (f) {
    parts.push(file(m, f))
    if (f.caption) parts.push(el("div", { class: "body", text: f.caption }))
  } else {
    switch (m.type) {
      case "location":
        if (m.location) parts.push(location(m.location))
        break
      case "contacts":
        parts.push(el(
          "ul",
          { class: "contacts" },
          ...(m.contacts ?? []).map((c) => el("li", { text: `👤 ${c.name}: ${c.phones.join(", ")}` }))
        ))
        break
      case "reaction":
        parts.push(el("div", {
          class: "body",
          text: m.reaction?.emoji
            ? `Reacted ${m.reaction.emoji} to: ${summary(byIdOf(byId, m.reaction.message_id))}`
            : "Removed a reaction"
        }))
        break
      case "edit":
        parts.push(el("div", {
          class: "body",
          text: `✎ Edited “${summary(byIdOf(byId, m.edit?.message_id))}” to: ${m.edit?.text?.body ?? ""}`
        }))
        break
      case "revoke":
        parts.push(el("div", {
          class: "body muted",
          text: `Deleted “${summary(byIdOf(byId, m.revoke?.message_id))}” for everyone`
        }))
        break
      case "call":
        parts.push(el("div", { class: "body call", text: callLine(m.call) }))
        break
      case "unsupported":
        parts.push(el("div", {
          class: "body muted",
          text: `[${m.unsupported?.kind ?? "message"}: not shown by WhatsApp's API]`
        }))
        break
      default:
        parts.push(el("div", { class: "body", text: messageText(m) }))
    }
  }
  if (reactions.length > 0) {
    parts.push(el(
      "div",
      { class: "reactions", "aria-label": "Reactions" },
      ...reactions.map((r) => el("span", { class: "reaction", title: r.by, text: `${r.emoji} ${r.by}` }))
    ))
  }
  return parts
}

/**
 * The reactions in `messages` (oldest first) by the message they react to: the latest of each
 * side counts, `""` removes it. Reactions whose message is in the list are not shown on their own.
 */
export function reactionsOf(messages: ReadonlyArray<Message>) {
  const ids = new Set<string>(messages.map((m) => m.id))
  const latest = new Map<string, { readonly target: string; readonly emoji: string; readonly by: string }>()
  const shownAlone = new Set<string>()
  for (const m of messages) {
    const target = m.type === "reaction" ? m.reaction?.message_id : null
    if (!target || !ids.has(target)) continue
    shownAlone.add(m.id)
    latest.set(`${target} ${m.direction}`, {
      target,
      emoji: m.reaction?.emoji ?? "",
      by: m.direction === "inbound" ? "They" : "You"
    })
  }
  const on = new Map<string, Array<Reaction>>()
  for (const r of latest.values()) {
    if (!r.emoji) continue
    on.set(r.target, [...(on.get(r.target) ?? []), { emoji: r.emoji, by: r.by }])
  }
  return { on, hidden: shownAlone }
}

/**
 * Replaces `list`'s children with one node per item, keeping the node of an item whose `sig` did
 * not change (a playing audio keeps playing, an image is not drawn again on each refresh).
 */
export function keyed<A>(
  list: HTMLElement,
  items: ReadonlyArray<A>,
  key: (item: A) => string,
  sig: (item: A) => string,
  render: (item: A) => HTMLElement
) {
  const old = new Map([...list.children].map((n) => [(n as HTMLElement).dataset.key, n]))
  const nodes = items.map((item) => {
    const k = key(item)
    const s = sig(item)
    const kept = old.get(k)
    if (kept instanceof HTMLElement && kept.dataset.sig === s) return kept
    const node = render(item)
    node.dataset.key = k
    node.dataset.sig = s
    return node
  })
  if (nodes.length === list.children.length && nodes.every((n, i) => list.children[i] === n)) return
  list.replaceChildren(...nodes)
}
