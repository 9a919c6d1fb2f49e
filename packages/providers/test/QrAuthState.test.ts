import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids } from "@switchboard/domain"
import { SecretBox, SecretsConfig } from "@switchboard/infra"
import { QrAuthState, QrAuthStateRepo } from "@switchboard/providers"
import { BufferJSON, Curve, initAuthCreds, proto } from "baileys"
import { Effect, Exit, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"

const TestLayer = QrAuthStateRepo.QrAuthStateRepo.Default.pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const key = SecretsConfig.makeKeyring(Redacted.make(randomBytes(32)))

/** The stored values of a channel, as they are at rest. */
const storedValues = (channelId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ key_type: string; key_id: string; value: string }>`
      SELECT key_type, key_id, value FROM qr_auth_state WHERE channel_id = ${channelId}`
    return rows
  }).pipe(Effect.orDie)

const parsesAsJson = (text: string) => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

describe("QrAuthState (Postgres)", () => {
  layer(TestLayer, { timeout: 120_000 })((it) => {
    it.effect("keeps creds and keys as BufferJSON, so Buffers and protobuf keys come back as such", () =>
      Effect.gen(function*() {
        const channelId = yield* Ids.newId("ch")
        const first = yield* QrAuthState.load(channelId, key)
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

        const again = yield* QrAuthState.load(channelId, key)
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

    it.effect("stores every value sealed: no secret of the creds or keys is readable at rest", () =>
      Effect.gen(function*() {
        const channelId = yield* Ids.newId("ch")
        const auth = yield* QrAuthState.load(channelId, key)
        auth.state.creds.me = { id: "15550001111:7@s.whatsapp.net" }
        yield* Effect.promise(() => auth.saveCreds())
        const preKey = Curve.generateKeyPair()
        yield* Effect.promise(async () => auth.state.keys.set({ "pre-key": { "1": preKey } }))

        const rows = yield* storedValues(channelId)
        assert.strictEqual(rows.length, 2)
        const secrets = [
          auth.state.creds.advSecretKey,
          Buffer.from(auth.state.creds.noiseKey.private).toString("base64"),
          Buffer.from(auth.state.creds.signedIdentityKey.private).toString("base64"),
          Buffer.from(preKey.private).toString("base64"),
          "15550001111"
        ]
        for (const row of rows) {
          assert.match(row.value, /^v1:[^:]+:[^:]+:[^:]+$/)
          assert.isFalse(parsesAsJson(row.value))
          for (const secret of secrets) assert.notInclude(row.value, secret)
        }
      }))

    it.effect("reads rows written in plaintext before encryption, and seals them on load", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo.QrAuthStateRepo
        const channelId = yield* Ids.newId("ch")
        const creds = initAuthCreds()
        creds.me = { id: "15550002222:3@s.whatsapp.net" }
        const preKey = Curve.generateKeyPair()
        const plain = (value: unknown) => JSON.stringify(value, BufferJSON.replacer)
        yield* repo.writeCreds(channelId, plain(creds))
        yield* repo.writeKeys(channelId, [{ type: "pre-key", id: "5", value: plain(preKey) }])

        const auth = yield* QrAuthState.load(channelId, key)
        assert.isTrue(auth.isPaired())
        assert.strictEqual(auth.state.creds.advSecretKey, creds.advSecretKey)
        const keys = yield* Effect.promise(async () => auth.state.keys.get("pre-key", ["5"]))
        assert.deepStrictEqual(Buffer.from(keys["5"]!.private), Buffer.from(preKey.private))
        const rows = yield* storedValues(channelId)
        assert.strictEqual(rows.length, 2)
        for (const row of rows) assert.isTrue(row.value.startsWith("v1:"))

        // and what was sealed reads back the same
        const again = yield* QrAuthState.load(channelId, key)
        assert.strictEqual(again.state.creds.advSecretKey, creds.advSecretKey)
        const keysAgain = yield* Effect.promise(async () => again.state.keys.get("pre-key", ["5"]))
        assert.deepStrictEqual(Buffer.from(keysAgain["5"]!.private), Buffer.from(preKey.private))
      }))

    it.effect("under another key the stored link reads as missing, and is kept for the right key", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo.QrAuthStateRepo
        const channelId = yield* Ids.newId("ch")
        const auth = yield* QrAuthState.load(channelId, key)
        auth.state.creds.me = { id: "15550003333:1@s.whatsapp.net" }
        yield* Effect.promise(() => auth.saveCreds())
        yield* Effect.promise(async () => auth.state.keys.set({ "session": { "a": Buffer.from("x") } }))

        const wrong = yield* QrAuthState.load(channelId, SecretsConfig.makeKeyring(Redacted.make(randomBytes(32))))
        assert.isFalse(wrong.isPaired())
        assert.notStrictEqual(wrong.state.creds.advSecretKey, auth.state.creds.advSecretKey)
        assert.deepStrictEqual(yield* Effect.promise(async () => wrong.state.keys.get("session", ["a"])), {})
        assert.deepStrictEqual(yield* repo.countByType(channelId), { creds: 1, session: 1 })

        const right = yield* QrAuthState.load(channelId, key)
        assert.isTrue(right.isPaired())
        assert.strictEqual(right.state.creds.advSecretKey, auth.state.creds.advSecretKey)
      }))

    it.effect("during a key rotation, rows sealed under a previous key are sealed again under the current one on load", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo.QrAuthStateRepo
        const channelId = yield* Ids.newId("ch")
        const a = Redacted.make(randomBytes(32))
        const b = Redacted.make(randomBytes(32))
        const underA = SecretsConfig.makeKeyring(a)
        const auth = yield* QrAuthState.load(channelId, underA)
        auth.state.creds.me = { id: "15550004444:2@s.whatsapp.net" }
        yield* Effect.promise(() => auth.saveCreds())
        const preKey = Curve.generateKeyPair()
        yield* Effect.promise(async () => auth.state.keys.set({ "pre-key": { "1": preKey, "2": preKey } }))
        // one row no configured key opens (e.g. sealed under a key lost long ago): kept as it is
        const lost = SecretsConfig.makeKeyring(Redacted.make(randomBytes(32))).seal("\"lost\"")
        yield* repo.writeKeys(channelId, [{ type: "session", id: "lost", value: lost }])
        const opensWith = (key: Redacted.Redacted<Buffer>, value: string) => SecretBox.opens(Redacted.value(key), value)
        const sealedRows = <R extends { readonly key_id: string }>(rows: ReadonlyArray<R>) =>
          rows.filter((r) => r.key_id !== "lost")
        for (const row of sealedRows(yield* storedValues(channelId))) assert.isTrue(opensWith(a, row.value))

        const rotating = yield* QrAuthState.load(channelId, SecretsConfig.makeKeyring(b, [a]))
        assert.isTrue(rotating.isPaired())
        assert.strictEqual(rotating.state.creds.advSecretKey, auth.state.creds.advSecretKey)
        const rows = yield* storedValues(channelId)
        assert.strictEqual(rows.length, 4)
        for (const row of sealedRows(rows)) {
          assert.isTrue(opensWith(b, row.value), `${row.key_type}/${row.key_id} not under the current key`)
          assert.isFalse(opensWith(a, row.value))
        }
        assert.strictEqual(rows.find((r) => r.key_id === "lost")!.value, lost)

        // the rotation is complete for this channel: the new key alone reads everything
        const afterwards = yield* QrAuthState.load(channelId, SecretsConfig.makeKeyring(b))
        assert.isTrue(afterwards.isPaired())
        assert.strictEqual(afterwards.state.creds.advSecretKey, auth.state.creds.advSecretKey)
        const keys = yield* Effect.promise(async () => afterwards.state.keys.get("pre-key", ["1", "2"]))
        assert.deepStrictEqual(Buffer.from(keys["2"]!.private), Buffer.from(preKey.private))
      }))

    it.effect("deletes a key set to null", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo.QrAuthStateRepo
        const channelId = yield* Ids.newId("ch")
        const auth = yield* QrAuthState.load(channelId, key)
        yield* Effect.promise(async () =>
          auth.state.keys.set({ "session": { "a": Buffer.from("x"), "b": Buffer.from("y") } })
        )
        yield* Effect.promise(async () => auth.state.keys.set({ "session": { "a": null } }))
        assert.deepStrictEqual(yield* repo.countByType(channelId), { session: 1 })
      }))

    it.effect("writes one keys.set atomically: a failure part-way leaves nothing behind", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo.QrAuthStateRepo
        const channelId = yield* Ids.newId("ch")
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
        const repo = yield* QrAuthStateRepo.QrAuthStateRepo
        const channelId = yield* Ids.newId("ch")
        const auth = yield* QrAuthState.load(channelId, key)
        const many = Object.fromEntries(Array.from({ length: 800 }, (_, i) => [String(i), Buffer.from([i % 256])]))
        const inFlight = auth.state.keys.set({ "pre-key": many as never })
        yield* auth.forget
        yield* Effect.promise(async () => inFlight)
        yield* Effect.promise(() => auth.saveCreds())
        assert.deepStrictEqual(yield* repo.countByType(channelId), {})
      }))

    it.effect("after seal, nothing more is written; wipe forgets one channel only", () =>
      Effect.gen(function*() {
        const repo = yield* QrAuthStateRepo.QrAuthStateRepo
        const channelId = yield* Ids.newId("ch")
        const other = yield* Ids.newId("ch")
        const auth = yield* QrAuthState.load(channelId, key)
        const otherAuth = yield* QrAuthState.load(other, key)
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
