/**
 * The QR safety cap and the warm-up of a new number on the send path: the pure policies are
 * `decideDaily`/`effectiveDailyCap` and `decideWarmUp` in the domain; this reads what they need
 * under the channel's row lock and refuses with 429 `QR_SAFETY_LIMIT_REACHED` (`details.reason`
 * `warm_up` for the warm-up). Other providers pass without a statement.
 */
import { QrSafetyRepo, QrWarmUpRepo } from "@switchboard/db"
import { Errors, type Messaging, QrSafetyWindow, QrWarmUp, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"
import * as QrProtectionMetrics from "../QrProtectionMetrics.js"

export class QrSafety extends Effect.Service<QrSafety>()("@switchboard/service-api/QrSafety", {
  effect: Effect.gen(function*() {
    const repo = yield* QrSafetyRepo.QrSafetyRepo
    const warmUp = yield* QrWarmUpRepo.QrWarmUpRepo

    const retryAfter = (retryAt: number, now: number) => Math.max(1, Math.ceil((retryAt - now) / 1000))

    /**
     * Refuses a send to a new contact (a recipient who never wrote to the channel) while WhatsApp
     * holds a reach-out timelock or reported the new-chat quota used up, or beyond the warm-up's cap
     * of the day (docs/LIMITS.md, "Number protection").
     */
    const admitNewContact = Effect.fn("QrSafety.admitNewContact")(
      function*(channel: Messaging.Channel, to: string, now: number) {
        const facts = yield* warmUp.facts(channel.id, to)
        if (facts.recipientKnown) return yield* QrProtectionMetrics.judged("known", "accepted")
        if (facts.timelockUntil !== null && facts.timelockUntil > now) {
          yield* QrProtectionMetrics.judged("new", "timelock")
          return yield* new Errors.QrSafetyLimitReached({
            message:
              "WhatsApp has paused this number's new chats (a reach-out timelock): messages to contacts who never wrote to it are refused until it ends; replies still go",
            details: {
              reason: "timelock",
              retry_at: Schemas.toTimestamp(facts.timelockUntil),
              retry_after_seconds: retryAfter(facts.timelockUntil, now)
            }
          })
        }
        const quota = facts.newChatQuota
        if (quota !== null && quota.used >= quota.total && (quota.cycleEndsAt === null || quota.cycleEndsAt > now)) {
          // without a cycle end, WhatsApp's next report lifts it; a day is the longest we wait unasked
          const until = quota.cycleEndsAt ?? quota.reportedAt + QrSafetyWindow.QR_DAILY_WINDOW_MS
          if (until > now) {
            yield* QrProtectionMetrics.judged("new", "new_chat_cap")
            return yield* new Errors.QrSafetyLimitReached({
              message:
                `WhatsApp's quota of new chats for this number is used up (${quota.used} of ${quota.total}): messages to contacts who never wrote to it are refused until the quota renews`,
              details: {
                reason: "new_chat_cap",
                limit: quota.total,
                retry_at: Schemas.toTimestamp(until),
                retry_after_seconds: retryAfter(until, now)
              }
            })
          }
        }
        const stage = QrWarmUp.warmUpStage({ now, linkedAt: facts.linkedAt, override: facts.override })
        if (stage._tag !== "WarmingUp") return yield* QrProtectionMetrics.judged("new", "accepted")
        const sent = yield* warmUp.newContactSends(
          channel.id,
          Schemas.toTimestamp(now - QrSafetyWindow.QR_DAILY_WINDOW_MS)
        )
        const decision = QrWarmUp.decideWarmUp({
          now,
          linkedAt: facts.linkedAt,
          override: facts.override,
          newContactSentAt: sent
        })
        yield* QrProtectionMetrics.judged("new", decision._tag === "Allowed" ? "accepted" : "warm_up")
        if (decision._tag === "Allowed") return
        return yield* new Errors.QrSafetyLimitReached({
          message:
            `The QR channel is warming up (day ${decision.day} of ${QrWarmUp.WARM_UP_DAYS} since its number was linked): at most ${decision.limit} messages to new contacts per 24 hours; replies to contacts who wrote first are not limited by the warm-up. Retry later`,
          details: {
            reason: "warm_up",
            limit: decision.limit,
            warm_up_day: decision.day,
            retry_at: Schemas.toTimestamp(decision.retryAt),
            retry_after_seconds: retryAfter(decision.retryAt, now)
          }
        })
      }
    )

    /**
     * Refuses one more message on a QR channel whose sent-in-window plus queued reached its cap,
     * or, to a new contact, beyond its warm-up cap; other providers pass. A group chat (`groupChat`)
     * is a chat the number is in, never a new contact: only the channel's cap counts it (once per
     * send, docs/API.md "Group chats"). Call inside the send
     * transaction, before the message is inserted: the channel row lock (held to commit) makes
     * concurrent sends count one after the other.
     */
    const admit = Effect.fn("QrSafety.admit")(function*(
      channel: Messaging.Channel,
      to: string,
      options: { readonly groupChat?: boolean } = {}
    ) {
      if (channel.provider !== "qr") return
      yield* repo.lockChannel(channel.id)
      // read after the lock: the clock and the count see every send committed before us
      const now = yield* Clock.currentTimeMillis
      const limit = QrSafetyWindow.effectiveDailyCap(yield* repo.overrides(channel.workspace_id, channel.id))
      const usage = yield* repo.usage(channel.id, Schemas.toTimestamp(now - QrSafetyWindow.QR_DAILY_WINDOW_MS))
      const decision = QrSafetyWindow.decideDaily({ now, limit, sentAt: usage.sentAt, queued: usage.queued })
      if (decision._tag === "Allowed") {
        return options.groupChat === true ? undefined : yield* admitNewContact(channel, to, now)
      }
      yield* QrProtectionMetrics.judged("any", "daily_cap")
      return yield* new Errors.QrSafetyLimitReached({
        message:
          `The QR channel's safety cap of ${decision.limit} messages per 24 hours is reached (sent plus queued); retry later`,
        details: {
          reason: "daily_cap",
          limit: decision.limit,
          retry_at: Schemas.toTimestamp(decision.retryAt),
          retry_after_seconds: retryAfter(decision.retryAt, now)
        }
      })
    })

    /**
     * Where a QR channel stands now (no lock: a reading, not an admission): its cap, warm-up,
     * WhatsApp's restrictions and what its protection did in the rolling 24 h, read in one statement
     * (`QrSafetyRepo.health`).
     */
    const usageOf = Effect.fn("QrSafety.usageOf")(function*(channel: Messaging.Channel) {
      const now = yield* Clock.currentTimeMillis
      const health = yield* repo.health(
        channel.id,
        Schemas.toTimestamp(now - QrSafetyWindow.QR_DAILY_WINDOW_MS),
        Schemas.toTimestamp(now)
      ).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.dieMessage("the QR channel's row went missing while it was read"),
          onSome: Effect.succeed
        }))
      )
      const limit = QrSafetyWindow.effectiveDailyCap(health.overrides)
      const facts = health.facts
      const stage = QrWarmUp.warmUpStage({ now, linkedAt: facts.linkedAt, override: facts.override })
      const newContacts = stage._tag === "WarmingUp" ? health.newContactSends : null
      return {
        channel_id: channel.id,
        limit,
        sent_24h: health.sent,
        queued: health.queued,
        remaining: Math.max(0, limit - health.sent - health.queued),
        sends_24h: { new_contacts: health.newContactSends, existing_contacts: health.existingContactSends },
        recipient_checks_24h: { on_whatsapp: health.onWhatsApp, not_on_whatsapp: health.notOnWhatsApp },
        restrictions: {
          timelock_until: facts.timelockUntil !== null && facts.timelockUntil > now
            ? Schemas.toTimestamp(facts.timelockUntil)
            : null,
          new_chat_quota: facts.newChatQuota === null ? null : {
            total: facts.newChatQuota.total,
            used: facts.newChatQuota.used,
            cycle_ends_at: facts.newChatQuota.cycleEndsAt === null
              ? null
              : Schemas.toTimestamp(facts.newChatQuota.cycleEndsAt),
            reported_at: Schemas.toTimestamp(facts.newChatQuota.reportedAt)
          },
          last_signal: health.lastSignal === null
            ? null
            : { signal: health.lastSignal.reason, at: Schemas.toTimestamp(health.lastSignal.at) },
          held_by_timelock: health.heldByTimelock
        },
        warm_up: {
          status: stage._tag === "WarmingUp"
            ? "warming_up" as const
            : stage._tag === "Off"
            ? "off" as const
            : "complete" as const,
          override: facts.override._tag === "Default"
            ? "none" as const
            : facts.override._tag === "Off"
            ? "off" as const
            : "capped" as const,
          linked_at: facts.linkedAt === null ? null : Schemas.toTimestamp(facts.linkedAt),
          day: stage._tag === "WarmingUp" ? stage.day : null,
          days: QrWarmUp.WARM_UP_DAYS,
          limit: stage._tag === "WarmingUp" ? stage.limit : null,
          new_contacts_24h: newContacts,
          remaining: stage._tag === "WarmingUp" ? Math.max(0, stage.limit - newContacts!) : null,
          next_day_at: stage._tag === "WarmingUp" ? Schemas.toTimestamp(stage.dayEndsAt) : null,
          ends_at: stage._tag === "WarmingUp"
            ? Schemas.toTimestamp(stage.endsAt)
            : stage._tag === "Complete"
            ? Schemas.toTimestamp(stage.endedAt)
            : null
        }
      }
    })

    return { admit, usageOf } as const
  }),
  dependencies: [QrSafetyRepo.QrSafetyRepo.Default, QrWarmUpRepo.QrWarmUpRepo.Default]
}) {}
