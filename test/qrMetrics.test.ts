/**
 * QR channels in `/metrics`, against the fake WhatsApp server (real Baileys, offline): live
 * connections by status, and socket closes and reconnects by WhatsApp's close code.
 */
import { assert, describe, layer } from "@effect/vitest"
import { MetricsServer } from "@switchboard/infra"
import { Duration, Effect, Layer } from "effect"
import * as QrHarness from "./qr/QrHarness.js"
import { api, eventually, signUp } from "./support/Fixtures.js"
import { parse, samples, total } from "./support/PrometheusParser.js"
import { appWith, createQrChannel, pairedChannel, Wa, waitForStatus } from "./support/QrApp.js"

/** What `/metrics` would answer, parsed strictly. */
const scrape = Effect.map(MetricsServer.scrape, parse)

describe("QR metrics", () => {
  layer(appWith(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped("counts connected QR channels, and the closes and reconnects of a dropped link by close code", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Metrics")
        const paired = yield* scrape
        assert.strictEqual(paired.get("switchboard_qr_channels")?.type, "gauge")
        assert.isAtLeast(total(paired, "switchboard_qr_channels", { status: "connected" }), 1)
        // after the scan WhatsApp closes with 515 (restart required) and the link comes back at once
        assert.isAtLeast(total(paired, "switchboard_qr_socket_closes_total", { code: "515" }), 1)
        assert.isAtLeast(total(paired, "switchboard_qr_reconnects_total", { close_code: "515" }), 1)

        const reconnects = total(paired, "switchboard_qr_reconnects_total")
        const logins = wa.stats.logins
        wa.dropConnections()
        yield* eventually(Effect.sync(() => wa.stats.logins), (n) => n > logins, 20_000)
        yield* waitForStatus(user, channelId, "connected")
        const after = yield* eventually(
          scrape,
          (m) => total(m, "switchboard_qr_reconnects_total") > reconnects,
          10_000
        )
        assert.isAbove(total(after, "switchboard_qr_reconnects_total"), reconnects)
        assert.isAtLeast(total(after, "switchboard_qr_channels", { status: "connected" }), 1)
        // one series per close code, never per channel
        for (const s of samples(after, "switchboard_qr_reconnects_total")) {
          assert.deepStrictEqual(Object.keys(s.labels), ["close_code"])
          assert.match(s.labels["close_code"]!, /^(\d+|none)$/)
        }
        // every status a connection left was taken off: no status counts below zero
        for (const s of samples(after, "switchboard_qr_channels")) assert.isAtLeast(s.value, 0, s.labels["status"])
      }))
  })
})

/** WhatsApp's address on a local port nothing listens on (as test/qrUnreachable.test.ts). */
const unreachableApp = Layer.unwrapEffect(Effect.map(QrHarness.closedPort, (port) =>
  appWith({}, {
    websocketUrl: `ws://127.0.0.1:${port}/ws/chat`,
    reconnectBaseDelay: Duration.millis(200),
    reconnectMaxDelay: Duration.millis(400)
  })))

describe("QR metrics when WhatsApp cannot be reached", () => {
  layer(unreachableApp, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("counts the attempts that never reached WhatsApp by reason", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const channelId = yield* createQrChannel(user, "Offline")
        const started = yield* (yield* api(user.accessToken, user.workspaceId)).qrPairing.start({
          path: { channelId },
          payload: null
        })
        assert.strictEqual(started.channel_id, channelId)
        yield* waitForStatus(user, channelId, "disconnected")
        const metrics = yield* scrape
        assert.isAtLeast(total(metrics, "switchboard_qr_connect_failures_total", { reason: "connection_refused" }), 3)
        assert.strictEqual(total(metrics, "switchboard_qr_channels", { status: "connected" }), 0)
      }))
  })
})
