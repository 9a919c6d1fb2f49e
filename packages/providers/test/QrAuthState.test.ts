import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { newId } from "@switchboard/domain"
import { QrAuthState, QrAuthStateRepo } from "@switchboard/providers"
import { Curve, proto } from "baileys"
import { Effect, Exit, Layer } from "effect"

const TestLayer = QrAuthStateRepo.Default.pipe(Layer.provideMerge(TestDatabase.sqlLayer))

describe("QrAuthState (Postgres)", () => {
  layer(TestLayer, { timeout: 120_000 })((it) => {
    it.effect("keeps creds and keys as BufferJSON, so Buffers and protobuf keys come back as such", () =>
      Effect.gen(function*() {
        const channelId = yield* newId("ch")
        const first = yield* QrAuthState.load(channelId)
        assert.isFalse(first.isPaired())
        first.state.creds.me = { id: "15550001111:7@s.whatsapp.net" }
        yield* Effect.promise(() => first.saveCreds())
        const preKey = Curve.generateKeyPair()
        yield* Effect.promise(async () =>
          first.state.keys.set({
            "pre-key": { "1": preKey },
            "app-state-sync-key": {
              "AAAA": proto.Message.AppStateSyncKeyData.fromObject({ keyData: Buffer.from([1, 2, 3]), timestamp: 7 })
            }
          })
        )

        const again = yield* QrAuthState.load(channelId)
        assert.isTrue(again.isPaired())
        assert.instanceOf(again.state.creds.noiseKey.public, Uint8Array)
        assert.deepStrictEqual(
          Buffer.from(again.state.creds.noiseKey.public),
          Buffer.from(first.state.creds.noiseKey.public)
        )
        assert.strictEqual(again.state.creds.advSecretKey, first.state.creds.advSecretKey)
        const keys = yield* Effect.promise(async () => again.state.keys.get("pre-key", ["1", "2"]))
        assert.deepStrictEqual(Object.keys(keys), ["1"])
        assert.instanceOf(keys["1"]!.private, Uint8Array)
        assert.deepStrictEqual(Buffer.from(keys["1"]!.private), Buffer.from(preKey.private))
        const sync = yield* Effect.promise(async () => again.state.keys.get("app-state-sync-key", ["AAAA"]))
        assert.instanceOf(sync["AAAA"], proto.Message.AppStateSyncKeyData)
        assert.deepStrictEqual(Buffer.from(sync["AAAA"]!.keyData!), Buffer.from([1, 2, 3]))
      }))

    it.effect("deletes a key set to null", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo
        const channelId = yield* newId("ch")
        const auth = yield* QrAuthState.load(channelId)
        yield* Effect.promise(async () =>
          auth.state.keys.set({ "session": { "a": Buffer.from("x"), "b": Buffer.from("y") } })
        )
        yield* Effect.promise(async () => auth.state.keys.set({ "session": { "a": null } }))
        assert.deepStrictEqual(yield* repo.countByType(channelId), { session: 1 })
      }))

    it.effect("writes one keys.set atomically: a failure part-way leaves nothing behind", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo
        const channelId = yield* newId("ch")
        const changes = Array.from({ length: 700 }, (_, i) => ({ type: "pre-key", id: String(i), value: `"v${i}"` }))
        // a NUL byte is refused by Postgres text: the second chunk of the upsert fails
        changes.push({ type: "pre-key", id: "bad\u0000id", value: "\"x\"" })
        const exit = yield* Effect.exit(repo.writeKeys(channelId, changes))
        assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual(yield* repo.countByType(channelId), {})
        yield* repo.writeKeys(channelId, changes.slice(0, 700))
        assert.deepStrictEqual(yield* repo.countByType(channelId), { "pre-key": 700 })
      }))

    it.effect("forget waits for a write in flight, then nothing of the channel is left", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo
        const channelId = yield* newId("ch")
        const auth = yield* QrAuthState.load(channelId)
        const many = Object.fromEntries(Array.from({ length: 800 }, (_, i) => [String(i), Buffer.from([i % 256])]))
        const inFlight = auth.state.keys.set({ "pre-key": many as never })
        yield* auth.forget
        yield* Effect.promise(async () => inFlight)
        yield* Effect.promise(() => auth.saveCreds())
        assert.deepStrictEqual(yield* repo.countByType(channelId), {})
      }))

    it.effect("after seal, nothing more is written; wipe forgets one channel only", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo
        const channelId = yield* newId("ch")
        const other = yield* newId("ch")
        const auth = yield* QrAuthState.load(channelId)
        const otherAuth = yield* QrAuthState.load(other)
        yield* Effect.promise(() => auth.saveCreds())
        yield* Effect.promise(() => otherAuth.saveCreds())
        auth.seal()
        yield* repo.wipe(channelId)
        yield* Effect.promise(() => auth.saveCreds())
        yield* Effect.promise(async () => auth.state.keys.set({ "session": { "late": Buffer.from("z") } }))
        assert.deepStrictEqual(yield* repo.countByType(channelId), {})
        assert.deepStrictEqual(yield* repo.countByType(other), { creds: 1 })
      }))
  })
})
