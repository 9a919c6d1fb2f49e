/**
 * Whether a number is on WhatsApp, asked once per channel before its first send to it (Baileys
 * `onWhatsApp`, a usync "contact" query). Sending to numbers that are not on WhatsApp is one of the
 * ways accounts get restricted (Baileys #2441), so such a send fails fast (`not_on_whatsapp`)
 * without a message going out. Answers are kept per channel: a number found stays found for the
 * connection's life, one not found is asked again after a day (people join). The check runs inside
 * the send, so it is paced like the sends themselves (0.5 per second per channel). Each answer
 * WhatsApp gives is reported (`recipient_checked`): kept on the contact and counted in the
 * channel's `qr/safety` (docs/LIMITS.md, "Number protection").
 */
import { Clock, Effect } from "effect"

/** How long a "not on WhatsApp" answer is trusted. */
export const NOT_FOUND_TTL_MS = 24 * 60 * 60 * 1000
/** Numbers remembered per channel at most (the oldest answer is forgotten first). */
const MAX_REMEMBERED = 10_000

/** What a check asks: the socket's `onWhatsApp` for one `…@s.whatsapp.net` jid. */
export type OnWhatsApp = (jid: string) => Promise<ReadonlyArray<{ readonly exists: unknown }> | undefined>

export interface RecipientCheck {
  /** Whether `jid` is on WhatsApp: remembered, or asked (a failure of the query fails). */
  readonly exists: (jid: string, ask: OnWhatsApp) => Effect.Effect<boolean, unknown>
  /** The same, saying whether WhatsApp was asked. */
  readonly check: (jid: string, ask: OnWhatsApp) => Effect.Effect<{ exists: boolean; asked: boolean }, unknown>
  /** checks that asked WhatsApp / answered from memory, since the connection was made */
  readonly stats: () => { readonly asked: number; readonly remembered: number }
}

export const makeRecipientCheck = (): RecipientCheck => {
  const answers = new Map<string, { readonly exists: boolean; readonly at: number }>()
  let asked = 0
  let remembered = 0
  const check = (jid: string, ask: OnWhatsApp) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const known = answers.get(jid)
      if (known !== undefined && (known.exists || now - known.at < NOT_FOUND_TTL_MS)) {
        remembered++
        return { exists: known.exists, asked: false }
      }
      asked++
      const result = yield* Effect.tryPromise({ try: () => ask(jid), catch: (error) => error })
      const exists = (result ?? []).some((r) => r.exists === true)
      answers.delete(jid)
      if (answers.size >= MAX_REMEMBERED) answers.delete(answers.keys().next().value!)
      answers.set(jid, { exists, at: now })
      return { exists, asked: true }
    })
  return {
    check,
    exists: (jid, ask) => Effect.map(check(jid, ask), (r) => r.exists),
    stats: () => ({ asked, remembered })
  }
}
