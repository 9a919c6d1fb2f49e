/**
 * WhatsApp refusing an outdated web client (docs/QR-CHANNELS.md "WhatsApp Web version"), through
 * the real Baileys client against the fake WhatsApp server: a close 405 leaves the channel
 * `disconnected` with `status_reason: client_outdated` and `channel.requires_repair` (no reconnect
 * loop); a channel set to a current version (`QR_WHATSAPP_WEB_VERSION`) announces it and links.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { QrConnectionConfig } from "@switchboard/providers/qr"
import { Effect, Option } from "effect"
import { appWith, channelEvents, pairedChannel, Wa, waitForStatus } from "./support/QrApp.js"

/** A version newer than the one Baileys ships: WhatsApp "moved on". */
const CURRENT: readonly [number, number, number] = [2, 3000, 2000000000]

describe("WhatsApp Web version", () => {
  layer(appWith({ phoneNumber: "+15550004141" }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("a link WhatsApp refuses as outdated (405) is disconnected with client_outdated and requires repair", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Outdated")
        wa.refuseVersionsBelow(CURRENT)
        const logins = wa.stats.connections
        wa.dropConnections()
        const channel = yield* waitForStatus(user, channelId, "disconnected")
        assert.strictEqual(channel.status_reason, "client_outdated")
        const events = yield* channelEvents(channelId)
        const repair = events.filter((e) => e.type === "channel.requires_repair")
        assert.strictEqual(repair.length, 1, JSON.stringify(events.map((e) => e.type)))
        assert.strictEqual(repair[0]!.data.reason, "client_outdated", JSON.stringify(repair[0]))
        // refused once, not retried in a loop
        assert.isAtMost(wa.stats.connections - logins, 2)
        wa.refuseVersionsBelow(undefined)
      }))
  })

  layer(
    appWith({ phoneNumber: "+15550004142" }, { whatsappWebVersion: Option.some(CURRENT) }),
    { excludeTestServices: true, timeout: 240_000 }
  )((it) => {
    it.scoped("a channel set to a current version announces it and links", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        wa.refuseVersionsBelow(CURRENT)
        yield* pairedChannel("Current")
        assert.strictEqual(wa.clientVersions.at(-1), CURRENT.join("."))
      }))
  })

  it.effect("reads QR_WHATSAPP_WEB_VERSION as three numbers, and nothing else", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(QrConnectionConfig.parseWhatsAppWebVersion("2.3000.1043857760"), [2, 3000, 1043857760])
      assert.isUndefined(QrConnectionConfig.parseWhatsAppWebVersion("2.3000"))
      assert.isUndefined(QrConnectionConfig.parseWhatsAppWebVersion("latest"))
    }))
})
