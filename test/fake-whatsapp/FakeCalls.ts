/**
 * Calls on the fake WhatsApp server, as the real one signals them to a linked companion: a
 * `<call>` stanza whose child is the step (`offer` with `audio` or `video`, `accept` from the
 * account's phone, `terminate`, `terminate reason="timeout"`), and the companion's `<call><reject>`
 * answered with an ack (Baileys' `rejectCall` waits for it). Baileys turns the steps into `call`
 * events (lib/Socket/messages-recv.js, `handleCall`).
 *
 * ```ts
 * const call = alice.calls({ video: true })
 * yield* call.offer            // rings on the companion
 * yield* call.hangsUp          // the caller gave up: a missed call
 * ```
 */
import type { BinaryNode } from "baileys"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"

/** What a call needs from the server: the logged-in session, and the rejects it heard. */
export interface CallLine {
  /** sends a stanza to the logged-in companion (throws when none is) */
  readonly toCompanion: (node: BinaryNode) => void
  /** the account's phone JID (who answers on the phone) */
  readonly phoneJid: () => string
  /** call ids the companion rejected, in order, duplicates included */
  readonly rejects: ReadonlyArray<{ readonly callId: string; readonly to: string }>
  readonly until: (predicate: () => boolean) => Effect.Effect<void>
}

const unixSeconds = (ms: number) => String(Math.floor(ms / 1000))

export class FakeCall {
  /** WhatsApp's id of the call */
  readonly id = randomBytes(16).toString("hex").toUpperCase()

  constructor(
    private readonly line: CallLine,
    /** the caller's JID (`<number>@s.whatsapp.net`, or its LID `<lid>@lid`) */
    readonly callerJid: string,
    readonly video: boolean,
    /** the caller's phone-number JID when `callerJid` is a LID (WhatsApp's `caller_pn`) */
    readonly callerPn?: string
  ) {}

  private step(child: BinaryNode, at = Date.now()) {
    return Effect.sync(() =>
      this.line.toCompanion({
        tag: "call",
        attrs: { from: this.callerJid, id: randomBytes(8).toString("hex").toUpperCase(), t: unixSeconds(at) },
        content: [{ ...child, attrs: { "call-id": this.id, "call-creator": this.callerJid, ...child.attrs } }]
      })
    )
  }

  /** The call rings on the companion (send it again to repeat the offer, as WhatsApp does after a reconnect). */
  get offer(): Effect.Effect<void> {
    return this.step({
      tag: "offer",
      attrs: this.callerPn === undefined ? {} : { caller_pn: this.callerPn },
      content: [
        { tag: "audio", attrs: { enc: "opus", rate: "16000" } },
        ...(this.video ? [{ tag: "video", attrs: { enc: "vp8", dec: "vp8" } }] : [])
      ]
    })
  }

  /** The caller hung up before anyone answered: a missed call. */
  get hangsUp(): Effect.Effect<void> {
    return this.step({ tag: "terminate", attrs: {} })
  }

  /** Nobody answered in time: WhatsApp ends the call (`reason="timeout"`). */
  get timesOut(): Effect.Effect<void> {
    return this.step({ tag: "terminate", attrs: { reason: "timeout" } })
  }

  /** The account's phone answered (at `at`, epoch ms). */
  answeredOnPhone(at = Date.now()): Effect.Effect<void> {
    return this.step({ tag: "accept", attrs: { from: this.line.phoneJid() } }, at)
  }

  /** The call ended after being answered (at `at`, epoch ms). */
  endsAt(at: number): Effect.Effect<void> {
    return this.step({ tag: "terminate", attrs: {} }, at)
  }

  /** How many times the companion rejected this call. */
  get rejections(): number {
    return this.line.rejects.filter((r) => r.callId === this.id).length
  }

  /** Waits until the companion rejected this call `times` times. */
  rejected(times = 1): Effect.Effect<void> {
    return this.line.until(() => this.rejections >= times)
  }
}
