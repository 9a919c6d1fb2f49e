/**
 * A QR channel's health (docs/CONSOLE.md "Number health"), from GET /v1/channels/{id}/qr/safety:
 * the 24 h safety cap's use, the warm-up's stage and today's cap for new contacts, the day's sends
 * to new and existing contacts, the recipient checks' answers, WhatsApp's restriction signals
 * (timelock and the sends it holds, new-chat quota, the last signal and when). Each line is text
 * (never colour alone); a line the route does not report is left out.
 */
import type { Answer, Channel } from "./lib.js"
import { api, el, when } from "./lib.js"

type Safety = Answer<"qrPairing", "safety">

const line = (term: string, text: string, cls = "") => [el("dt", { text: term }), el("dd", { class: cls, text })]

function warmUpText(w: Safety["warm_up"]) {
  if (w.status === "warming_up") {
    const lowered = w.override === "capped" ? " (lowered by the operator)" : ""
    return `Day ${w.day} of ${w.days}: today's cap for new contacts is ${w.limit}${lowered}, ` +
      `${w.new_contacts_24h} used, ${w.remaining} left; the next day (a higher cap) begins ${when(w.next_day_at)}`
  }
  if (w.status === "complete") {
    return `Complete since ${when(w.ends_at)}: new contacts count only against the safety cap`
  }
  return w.override === "off" ? "Off: switched off by the operator" : "Off: the time the number was linked is not known"
}

/** WhatsApp's restriction signals (`restrictions.last_signal.signal`), for a person. */
const SIGNALS: Record<string, string> = {
  account_restricted: "WhatsApp refused a message (463: no new chats for now)",
  reachout_timelocked: "WhatsApp paused new chats (reach-out timelock)",
  new_chats_capped: "WhatsApp's new-chat quota used up",
  rate_limited: "WhatsApp throttled sends (429)",
  restriction_lifted: "WhatsApp lifted its restriction"
}

/** The lines of the panel for one answer of the safety route. */
export function healthLines(u: Safety, now = Date.now()) {
  const lines: Array<HTMLElement> = []
  lines.push(...line(
    "Safety cap",
    `${u.sent_24h + u.queued} of ${u.limit} used in 24 h (${u.sent_24h} sent, ${u.queued} queued, ${u.remaining} left)`,
    u.remaining === 0 ? "s-bad" : ""
  ))
  lines.push(
    ...line(
      "Warm-up",
      warmUpText(u.warm_up),
      u.warm_up.status === "warming_up" && u.warm_up.remaining === 0 ? "s-bad" : ""
    )
  )
  if (u.sends_24h) {
    lines.push(...line(
      "Sent in 24 h",
      `${u.sends_24h.new_contacts} to new contacts, ${u.sends_24h.existing_contacts} to contacts who wrote first`
    ))
  } else if (typeof u.warm_up.new_contacts_24h === "number") {
    lines.push(...line("Sent in 24 h", `${u.warm_up.new_contacts_24h} to new contacts`))
  }
  if (u.recipient_checks_24h) {
    const c = u.recipient_checks_24h
    lines.push(...line(
      "Recipient checks",
      `${c.on_whatsapp} on WhatsApp, ${c.not_on_whatsapp} not on WhatsApp in 24 h` +
        (c.not_on_whatsapp > 0 ? " (their sends failed; check how those numbers were collected)" : "")
    ))
  }
  const timelock = u.restrictions.timelock_until
  const held = u.restrictions.held_by_timelock ?? 0
  const locked = timelock !== null && Date.parse(timelock) > now
  lines.push(...line(
    "Timelock",
    locked
      ? `WhatsApp paused new chats until ${when(timelock)} (replies still go)` +
        (held > 0 ? `; ${held} queued ${held === 1 ? "message waits" : "messages wait"} for it to end` : "")
      : "None",
    locked ? "s-bad" : ""
  ))
  const quota = u.restrictions.new_chat_quota
  if (quota) {
    const ends = quota.cycle_ends_at ? `, the cycle ends ${when(quota.cycle_ends_at)}` : ""
    lines.push(...line(
      "New-chat quota",
      `${quota.used} of ${quota.total} used${ends} (reported ${when(quota.reported_at)})`,
      quota.used >= quota.total ? "s-bad" : ""
    ))
  }
  const signal = u.restrictions.last_signal
  if (signal !== undefined) {
    lines.push(
      ...line("Last signal", signal ? `${SIGNALS[signal.signal] ?? signal.signal}, ${when(signal.at)}` : "None")
    )
  }
  return lines
}

/** Channels whose panel someone opened: it stays open when the list is drawn again. */
const opened = new Set<string>()

/** The panel for a QR channel: filled once the route answers; an error says so in the panel. */
export function healthPanel(channel: Channel) {
  const list = el("dl", { class: "health", "aria-label": `Number health of ${channel.name}` })
  const summary = el("summary", { text: "Number health" })
  const panel = el("details", { class: "health-panel", "data-health": channel.id }, summary, list)
  panel.open = opened.has(channel.id)
  panel.addEventListener("toggle", () => panel.open ? opened.add(channel.id) : opened.delete(channel.id))
  api.qrPairing.safety({ path: { channelId: channel.id } }).then(
    (u) => {
      list.replaceChildren(...healthLines(u))
      // what a person should see without opening the panel: is anything holding sends back?
      const held = list.querySelector("dd.s-bad")
      // (it never closes a panel someone opened while the answer was on its way)
      if (held) panel.open = true
      summary.textContent = held ? "Number health: sends held back" : "Number health"
    },
    () => list.replaceChildren(el("dd", { class: "muted", text: "Not available right now." }))
  )
  return panel
}
