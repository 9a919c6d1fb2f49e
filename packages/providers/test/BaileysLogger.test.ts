import { assert, describe, it } from "@effect/vitest"
import { BaileysLogger } from "@switchboard/providers"
import { Effect, HashMap, Logger, LogLevel, Option } from "effect"

const QR =
  "https://wa.me/settings/linked_devices#2@0VaXq7c3Zb1pQmW9sT2uV8yX4zA6cE0gI2kM=,MtfqqWAbCdEfGhIjKlMnOpQrStUvWxYz0123456789ab=,pGHGAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abc=,LxgVAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abc=,1"
const REF = "2@0VaXq7c3Zb1pQmW9sT2uV8yX4zA6cE0gI2kM="

describe("BaileysLogger", () => {
  it("scrubs QR links, refs (also as hex) and known secrets", () => {
    const scrub = BaileysLogger.scrubQrMaterial
    assert.strictEqual(scrub(`qr ${QR} end`), "qr [qr] end")
    assert.strictEqual(scrub(`<ref>${REF}</ref>`), "<ref>[qr-ref]</ref>")
    assert.strictEqual(scrub(`<ref> ${Buffer.from(REF).toString("hex")} </ref>`), "<ref> [qr-ref] </ref>")
    assert.strictEqual(scrub("adv=LxgVAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abc=", [QR]), "adv=[redacted]")
    assert.strictEqual(scrub("nothing secret here 1234"), "nothing secret here 1234")
  })

  it("keeps the message and scalar fields, never whole objects", () => {
    const text = BaileysLogger.formatBaileysLog({
      node: { tag: "iq", attrs: { secret: "s3cret" } },
      count: 812,
      err: new Error("boom")
    }, "uploading")
    assert.strictEqual(text, "uploading count=812 err=boom")
    assert.strictEqual(BaileysLogger.formatBaileysLog("plain message", "extra"), "plain message extra")
  })

  it.effect("forwards at and above its level, annotated, scrubbed", () =>
    Effect.gen(function*() {
      const lines: Array<{ level: string; message: unknown; channel: unknown }> = []
      const capture = Logger.make(({ annotations, logLevel, message }) => {
        lines.push({
          level: logLevel.label,
          message,
          channel: Option.getOrUndefined(HashMap.get(annotations, "channel_id"))
        })
      })
      yield* Effect.gen(function*() {
        const runtime = yield* Effect.runtime<never>()
        const logger = BaileysLogger.makeBaileysLogger({
          level: "warn",
          runtime,
          annotations: { channel_id: "ch_x" },
          secrets: () => []
        })
        logger.info({}, "not forwarded")
        logger.warn({ qr: QR }, "forwarded")
        logger.child({ a: 1 }).error("child error")
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)), Logger.withMinimumLogLevel(LogLevel.All))
      assert.deepStrictEqual(lines.map((l) => [l.level, l.message, l.channel]), [
        ["WARN", ["forwarded qr=[qr]"], "ch_x"],
        ["ERROR", ["child error"], "ch_x"]
      ])
    }))
})
