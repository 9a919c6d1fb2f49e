// A QR channel's health (docs/CONSOLE.md "Number health"), from GET /v1/channels/{id}/qr/safety:
// the 24 h safety cap's use, the warm-up's stage and today's cap for new contacts, sends to new
// and existing contacts, WhatsApp's restriction signals (timelock, new-chat quota) and the
// recipient checks. Each line is text (never colour alone); a line the route does not report is
// left out.
import { api, el, when } from "./lib.mjs"

const line = (term, text, cls = "") =>
  [el("dt", { text: term }), el("dd", { class: cls, text })]

function warmUpText(w) {
  if (w.status === "warming_up") {
    const lowered = w.override === "capped" ? " (lowered by the operator)" : ""
    return `Day ${w.day} of ${w.days}: today's cap for new contacts is ${w.limit}${lowered}, ` +
      `${w.new_contacts_24h} used, ${w.remaining} left; the next day (a higher cap) begins ${when(w.next_day_at)}`
  }
  if (w.status === "complete") return `Complete since ${when(w.ends_at)}: new contacts count only against the safety cap`
  return w.override === "off" ? "Off: switched off by the operator" : "Off: the time the number was linked is not known"
}

/** The lines of the panel for one answer of the safety route. */
export function healthLines(u, now = Date.now()) {
  const lines = []
  lines.push(...line("Safety cap", `${u.sent_24h + u.queued} of ${u.limit} used in 24 h (${u.sent_24h} sent, ${u.queued} queued, ${u.remaining} left)`,
    u.remaining === 0 ? "s-bad" : ""))
  lines.push(...line("Warm-up", warmUpText(u.warm_up), u.warm_up.status === "warming_up" && u.warm_up.remaining === 0 ? "s-bad" : ""))
  const contacts = u.contacts_24h
  if (contacts) {
    lines.push(...line("Sent in 24 h", `${contacts.new} to new contacts, ${contacts.existing} to existing ones`))
  } else if (typeof u.warm_up.new_contacts_24h === "number") {
    lines.push(...line("Sent in 24 h", `${u.warm_up.new_contacts_24h} to new contacts`))
  }
  const timelock = u.restrictions.timelock_until
  lines.push(...line("Timelock", timelock && Date.parse(timelock) > now
    ? `WhatsApp paused new chats until ${when(timelock)} (replies still go)`
    : "None", timelock && Date.parse(timelock) > now ? "s-bad" : ""))
  const quota = u.restrictions.new_chat_quota
  if (quota) {
    const ends = quota.cycle_ends_at ? `, the cycle ends ${when(quota.cycle_ends_at)}` : ""
    lines.push(...line("New-chat quota", `${quota.used} of ${quota.total} used${ends} (reported ${when(quota.reported_at)})`,
      quota.used >= quota.total ? "s-bad" : ""))
  }
  const signal = u.restrictions.last_signal
  if (signal) lines.push(...line("Last restriction signal", `${String(signal.kind).replace(/_/g, " ")}, ${when(signal.at)}`))
  const checks = u.recipient_checks
  if (checks) {
    lines.push(...line("Recipient checks (24 h)", `${checks.on_whatsapp} on WhatsApp, ${checks.not_on_whatsapp} not on WhatsApp`))
  }
  return lines
}

/** The panel for a QR channel: filled once the route answers; an error says so in the panel. */
export function healthPanel(channel) {
  const list = el("dl", { class: "health", "aria-label": `Number health of ${channel.name}` })
  const panel = el("details", { class: "health-panel", "data-health": channel.id },
    el("summary", { text: "Number health" }), list)
  api("GET", `/v1/channels/${channel.id}/qr/safety`).then(
    (u) => {
      list.replaceChildren(...healthLines(u))
      // what a person should see without opening the panel: is anything holding sends back?
      const held = list.querySelector("dd.s-bad")
      panel.open = held !== null
      panel.querySelector("summary").textContent = held ? "Number health: sends held back" : "Number health"
    },
    () => list.replaceChildren(el("dd", { class: "muted", text: "Not available right now." }))
  )
  return panel
}
