/**
 * What WhatsApp queued while a QR channel's link was down, and live messages marked as offline, are
 * all recorded (docs/QR-CHANNELS.md "Baileys faults we defend"), through the real Baileys client
 * against the fake WhatsApp server:
 *
 * - a status broadcast the companion cannot decrypt, first in the offline queue, must not hold back
 *   the texts after it. WhatsApp keeps a status the companion refuses (an ack with `error`) pending
 *   and withholds the rest of the queue behind it (Baileys PR 2779); the fake server does the same.
 *   Baileys 7.0.0-rc14 refuses it; our patch acks it (patches/baileys+7.0.0-rc14.patch).
 * - live texts marked `offline="0"` while the offline notice never comes (Baileys issue 2810):
 *   Baileys reads them as offline and its initial event buffer holds them; rc14 flushes that buffer
 *   after 30 s whatever happens, which this pins.
 */
import { assert, describe, layer } from "@effect/vitest"
import type { Messaging } from "@switchboard/domain"
import { Effect } from "effect"
import { api, eventually, type SignedUp } from "./support/Fixtures.js"
import { appWith, inboundUntil, pairedChannel, Wa } from "./support/QrApp.js"

describe("QR offline queue", () => {
  layer(appWith({ phoneNumber: "+15550005252" }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "an undecryptable status first in the offline queue does not hold back the texts after it",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { channelId, user } = yield* pairedChannel("Status first")
          const poster = wa.contact("+4915112349040")
          const contact = wa.contact("+4915112349041")
          wa.holdLogins()
          wa.dropConnections()
          yield* wa.until(() => !wa.companionOnline)
          // the poster's phone never answers the retry receipt (offline, or its sender key is gone)
          wa.holdResends()
          const status = yield* poster.says("my status", { chat: "status", garbled: true })
          const bodies = ["queued after the status", "and one more"]
          for (const body of bodies) yield* contact.says(body)
          assert.strictEqual(wa.heldOffline, 3)
          wa.releaseLogins()

          const recorded = yield* inboundUntil(user, channelId, (data) => data.length >= 2, 45_000)
          assert.sameMembers(
            recorded.map((m) => m.text.body),
            bodies,
            JSON.stringify({ acks: wa.messageAcks, held: wa.heldOffline })
          )
          // the status was acknowledged, not refused, so WhatsApp let the rest through
          assert.deepStrictEqual(wa.messageAcks.filter((a) => a.id === status), [{ id: status }])
          assert.strictEqual(wa.heldOffline, 0)
        }),
      150_000
    )

    it.scoped(
      "live texts marked offline=\"0\" are recorded although the offline notice never comes",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { channelId, user } = yield* pairedChannel("Never drained")
          const contact = wa.contact("+4915112349042")
          // the next login gets no `<ib><offline/>`: Baileys' initial event buffer stays open
          wa.holdOfflineNotice()
          const logins = wa.stats.logins
          wa.dropConnections()
          yield* wa.until(() => wa.stats.logins > logins && wa.companionOnline)
          const bodies = ["live but marked offline", "again", "and again"]
          for (const body of bodies) yield* contact.says(body, { offline: "0" })
          // rc14 flushes the buffer 30 s after it opened (Utils/event-buffer.js, BUFFER_TIMEOUT_MS)
          const recorded = yield* inboundUntil(user, channelId, (data) => data.length >= 3, 90_000)
          assert.sameMembers(recorded.map((m) => m.text.body), bodies)
          yield* contact.says("after the flush", { offline: "0" })
          const all = yield* inboundUntil(user, channelId, (data) => data.length >= 4, 30_000)
          assert.sameMembers(all.map((m) => m.text.body), [...bodies, "after the flush"])
          wa.releaseOfflineNotice()
        }),
      150_000
    )
  })
})
