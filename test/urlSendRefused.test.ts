/**
 * A send by URL (`{"image": {"url": ...}}`, docs/API.md "Media") fetches its file when the send is
 * accepted, before the write; a send refused after that (here the plan's contacts limit, and a
 * voice note of another type) leaves nothing behind: no media row, no chunk, no file, with the
 * bytes in Postgres (the default) and in files (`MEDIA_STORE=filesystem`) alike.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { ConfigProvider, Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { api, refused, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"
const OTHER = "+4915187654321"

/**
 * The refusal of a call that must be refused; an acceptance fails the test with a plain message
 * rather than with the accepted record as its error.
 */
const mustRefuse = <A, E, R>(call: Effect.Effect<A, E, R>) =>
  refused(Effect.zipRight(call, Effect.dieMessage("accepted, where a refusal was expected")))

const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(5000)])
const mp3 = Buffer.concat([Buffer.from("ID3\x04\0\0\0\0\0\0"), randomBytes(900)])

/** A local server answering `/file.png` and `/file.mp3`. */
const fileServer = Effect.acquireRelease(
  Effect.async<{ url: string; close: () => void }>((resume) => {
    const server = createServer((req, res) => {
      const [bytes, type] = req.url === "/file.mp3" ? [mp3, "audio/mpeg"] : [png, "image/png"]
      res.writeHead(200, { "content-type": type, "content-length": bytes.byteLength })
      res.end(bytes)
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, close: () => server.close() }))
    })
  }),
  (s) => Effect.sync(s.close)
)

const dir = mkdtempSync(join(tmpdir(), "sbt-url-send-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
/** Every file the filesystem store holds (temporary ones included). */
const files = () => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length

/** The app with the bytes in files under `dir`; the rest of its configuration as usual. */
const fileStoreApp = TestApp.layer().pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map([["MEDIA_STORE", "filesystem"], ["MEDIA_DIR", dir]])).pipe(
      ConfigProvider.orElse(() => ConfigProvider.fromEnv())
    )
  ))
)

/** The workspace's media rows and stored chunks, and the store's files. */
const stored = (workspaceId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ media: number; chunks: number }>`SELECT
      (SELECT count(*)::int FROM media WHERE workspace_id = ${workspaceId}) AS media,
      (SELECT count(*)::int FROM media_chunks c JOIN media m ON m.id = c.media_id
        WHERE m.workspace_id = ${workspaceId}) AS chunks`
    return { media: row!.media, chunks: row!.chunks, files: files() }
  }).pipe(Effect.orDie)

const refusedSendsLeaveNothing = Effect.gen(function*() {
  const { key, user } = yield* sandboxSetup([TO, OTHER])
  const client = yield* api(key)
  const server = yield* fileServer
  yield* client.messages.send({ payload: { to: TO, text: { body: "hello" } }, headers: {} })
  // one contact now, and the plan takes no more
  yield* Effect.flatMap(Operator.Operator, (o) => o.override(user.workspaceId, "contacts", 1)).pipe(
    Effect.provide(TestApp.operatorLayer)
  )
  const before = yield* stored(user.workspaceId)
  const overLimit = yield* mustRefuse(client.messages.send({
    payload: { to: OTHER, image: { url: `${server.url}/file.png`, caption: "menu" } },
    headers: {}
  }))
  assert.strictEqual(overLimit.status, 409)
  assert.strictEqual(overLimit.code, "ENTITLEMENT_LIMIT_REACHED")
  assert.deepStrictEqual(yield* stored(user.workspaceId), before)
  // refused for its type once fetched (a voice note is Ogg Opus only): nothing kept either
  const voice = yield* mustRefuse(client.messages.send({
    payload: { to: TO, audio: { url: `${server.url}/file.mp3`, voice: true } },
    headers: {}
  }))
  assert.strictEqual(voice.details["reason"], "voice_note_type_unsupported")
  assert.deepStrictEqual(yield* stored(user.workspaceId), before)
  // the same URL to the contact the plan holds is sent, its file stored once
  const sent = yield* client.messages.send({
    payload: { to: TO, image: { url: `${server.url}/file.png` } },
    headers: {}
  })
  assert.strictEqual(sent.image?.size_bytes, png.byteLength)
  const after = yield* stored(user.workspaceId)
  assert.strictEqual(after.media, before.media + 1)
  assert.isTrue(after.chunks > before.chunks || after.files > before.files)
  const list = yield* client.messages.list({ urlParams: {} })
  assert.deepStrictEqual(list.data.map((m) => m.type), ["image", "text"])
})

describe("a send by URL refused after its fetch", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("keeps no media row or chunk (bytes in Postgres)", () => refusedSendsLeaveNothing)
  })

  layer(fileStoreApp, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("keeps no media row or file (MEDIA_STORE=filesystem)", () => refusedSendsLeaveNothing)
  })
})
