/**
 * The QR safety cap on `POST /v1/messages` and the operator command
 * that lowers it. Each QR channel is really paired (over HTTP, with the fake WhatsApp server) and
 * dispatches what it accepts, as in production.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ContactsRepo, ConversationsRepo, DatabaseConfig, MessagesRepo } from "@switchboard/db"
import { Ids, Schemas } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect, Layer, Option, Redacted } from "effect"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { api, envelopeOf, request, sandboxSetup } from "./support/Fixtures.js"
import type { Reply, SignedUp } from "./support/Fixtures.js"
import { adminRun } from "./support/Processes.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"
import * as TestApp from "./support/TestApp.js"

const RECIPIENTS = 7
const recipient = (i: number) => `+49151${String(10_000_000 + (i % RECIPIENTS)).padStart(8, "0")}`

/** A paired QR channel whose recipients exist on the fake network. */
const connectedQrChannel = Effect.gen(function*() {
  const wa = yield* Wa
  for (let i = 0; i < RECIPIENTS; i++) wa.contact(recipient(i))
  return yield* pairedChannel()
})

/** An outbound message that went out earlier (a row as dispatch leaves it), never queued now. */
const pastMessage = (
  workspaceId: string,
  channelId: string,
  fields: { readonly status: string; readonly sentAt?: string; readonly updatedAt?: string }
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const messages = yield* MessagesRepo.MessagesRepo
    const contacts = yield* ContactsRepo.ContactsRepo
    const conversations = yield* ConversationsRepo.ConversationsRepo
    const now = Schemas.toTimestamp(Date.now())
    yield* sql.withTransaction(Effect.gen(function*() {
      const contact = yield* contacts.upsertContact(workspaceId, recipient(0), now)
      const conversationId = yield* conversations.upsertConversation(workspaceId, channelId, contact.id, now)
      const message = yield* messages.insert({
        id: yield* Ids.newId("msg"),
        workspaceId,
        channelId,
        conversationId,
        contactId: contact.id,
        direction: "outbound",
        from: null,
        to: recipient(0),
        body: "earlier",
        category: "utility",
        priority: 1,
        status: "sent",
        metadata: {},
        now
      })
      yield* sql`UPDATE messages SET status = ${fields.status}, sent_at = ${fields.sentAt ?? null},
          updated_at = ${fields.updatedAt ?? now}
        WHERE id = ${message.id}`
    }))
  }).pipe(
    Effect.provide(
      Layer.mergeAll(
        MessagesRepo.MessagesRepo.Default,
        ContactsRepo.ContactsRepo.Default,
        ConversationsRepo.ConversationsRepo.Default
      )
    ),
    Effect.orDie
  )

// raw: the refusals' Retry-After header is read (assertRefused)
const send = (user: SignedUp, channelId: string, i: number) =>
  request("POST", "/v1/messages", {
    token: user.accessToken,
    workspace: user.workspaceId,
    body: { channel_id: channelId, to: recipient(i), text: { body: `hello ${i}` } }
  })

const assertRefused = (reply: Reply, limit: number) => {
  assert.strictEqual(reply.status, 429, reply.text)
  assert.strictEqual(envelopeOf(reply).code, "QR_SAFETY_LIMIT_REACHED")
  assert.strictEqual(envelopeOf(reply).details.limit, limit)
  assert.match(envelopeOf(reply).details.retry_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/)
  assert.match(reply.headers["retry-after"] ?? "", /^\d+$/)
  const retryAfter = Number(reply.headers["retry-after"])
  assert.isAtLeast(retryAfter, 1)
  assert.isAtMost(retryAfter, 24 * 3600)
  return retryAfter
}

/** The real CLI on this file's database (real mode); the embedded database is in-process only. */
const cliEnv = Effect.gen(function*() {
  const config = yield* DatabaseConfig.DatabaseConfig
  return Option.map(config.url, (url) => ({ DATABASE_URL: Redacted.value(url) }))
})

/**
 * `qr-limit` as the operator runs it: the spawned CLI in real mode; in embedded mode (the test
 * database lives in this process) the same `Operator.qrLimit` use-case the CLI calls.
 */
const qrLimit = (workspaceId: string, channelId: string | undefined, limit: number | "clear") =>
  Effect.gen(function*() {
    const env = yield* cliEnv
    if (Option.isSome(env)) {
      const args = ["qr-limit", "--workspace", workspaceId]
      if (channelId !== undefined) args.push("--channel", channelId)
      args.push(...(limit === "clear" ? ["--clear"] : ["--limit", String(limit)]))
      const run = yield* Effect.promise(() => adminRun(args, env.value))
      assert.strictEqual(run.code, 0, run.err)
      return JSON.parse(run.out.trim().split("\n").pop()!)
    }
    return yield* Effect.flatMap(
      Operator.Operator,
      (o) => o.qrLimit(workspaceId, channelId, limit === "clear" ? undefined : limit)
    ).pipe(Effect.provide(TestApp.operatorLayer), Effect.orDie)
  })

describe("QR safety cap", () => {
  layer(appWith(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped(
      "accepts 200 sends on a QR channel, even concurrent ones, and refuses the rest with 429",
      () =>
        Effect.gen(function*() {
          const { channelId, user } = yield* connectedQrChannel
          // a newly linked number warms up (20 new contacts on day 1, test/qrRestrictions.test.ts):
          // the 200 window is what this test is about
          yield* Effect.flatMap(Operator.Operator, (o) => o.qrWarmUp(user.workspaceId, channelId, "off")).pipe(
            Effect.provide(TestApp.operatorLayer)
          )
          // concurrent sends race for the last places: the channel lock lets exactly 200 in
          const replies = yield* Effect.forEach(
            Array.from({ length: 206 }, (_, i) => i),
            (i) => send(user, channelId, i),
            { concurrency: 12 }
          )
          assert.deepStrictEqual(
            replies.map((r) => r.status).filter((s) => s !== 201 && s !== 429),
            [],
            "only 201 or 429"
          )
          assert.strictEqual(replies.filter((r) => r.status === 201).length, 200)
          for (const refused of replies.filter((r) => r.status === 429)) assertRefused(refused, 200)
          const next = yield* send(user, channelId, 999)
          const retryAfter = assertRefused(next, 200)
          // nothing sent yet, only queued: room appears once they are sent and 24 h pass
          assert.isAtLeast(retryAfter, 24 * 3600 - 60)
          assert.isAtLeast(Date.parse(envelopeOf(next).details.retry_at), Date.now() + 24 * 3600_000 - 60_000)
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<
            { n: number }
          >`SELECT count(*)::int AS n FROM messages WHERE channel_id = ${channelId}`
          assert.strictEqual(rows[0]!.n, 200)
        }),
      { timeout: 180_000 }
    )

    it.scoped(
      "counts messages handed to WhatsApp in the last 24 h plus queued ones, not older ones",
      () =>
        Effect.gen(function*() {
          const { channelId, user } = yield* connectedQrChannel
          const lowered = yield* Effect.flatMap(Operator.Operator, (o) => o.qrLimit(user.workspaceId, channelId, 5))
            .pipe(
              Effect.provide(TestApp.operatorLayer)
            )
          assert.strictEqual(lowered.effective_limit, 5)
          // earlier traffic: two sent 23 h ago (in the window), one 25 h ago (out of it), one accepted
          // by WhatsApp 10 minutes ago without its ack yet (after 15 minutes it fails: docs/RETRIES.md)
          const now = Date.now()
          const h23 = new Date(now - 23 * 3600_000).toISOString()
          const h25 = new Date(now - 25 * 3600_000).toISOString()
          const m10 = new Date(now - 600_000).toISOString()
          yield* pastMessage(user.workspaceId, channelId, { status: "sent", sentAt: h23 })
          yield* pastMessage(user.workspaceId, channelId, { status: "read", sentAt: h23 })
          yield* pastMessage(user.workspaceId, channelId, { status: "delivered", sentAt: h25 })
          yield* pastMessage(user.workspaceId, channelId, { status: "provider_accepted", updatedAt: m10 })
          // 3 of 5 used: two more fit (queued or sent, they count alike)
          for (let i = 0; i < 2; i++) {
            const reply = yield* send(user, channelId, i + 1)
            assert.strictEqual(reply.status, 201, reply.text)
          }
          const refused = yield* send(user, channelId, 3)
          const retryAfter = assertRefused(refused, 5)
          // room appears when the oldest send in the window leaves it
          assert.strictEqual(
            envelopeOf(refused).details.retry_at,
            new Date(Date.parse(h23) + 24 * 3600_000).toISOString()
          )
          assert.isAtLeast(retryAfter, 3600 - 60)
          assert.isAtMost(retryAfter, 3600)
          // what the console shows: the same count, read through the API
          const safety = yield* (yield* api(user.accessToken, user.workspaceId)).qrPairing.safety({
            path: { channelId }
          })
          assert.strictEqual(safety.limit, 5)
          assert.strictEqual(safety.sent_24h + safety.queued, 5)
          assert.isAtLeast(safety.sent_24h, 3)
          assert.strictEqual(safety.remaining, 0)
        }),
      { timeout: 180_000 }
    )

    it.scoped(
      "an operator lowers a channel's cap through the CLI; sends beyond it are refused with that limit",
      () =>
        Effect.gen(function*() {
          const { channelId, user } = yield* connectedQrChannel
          const lowered = yield* qrLimit(user.workspaceId, channelId, 3)
          assert.deepStrictEqual(lowered, {
            workspace_id: user.workspaceId,
            channel_id: channelId,
            limit: 3,
            effective_limit: 3
          })
          for (let i = 0; i < 3; i++) assert.strictEqual((yield* send(user, channelId, i)).status, 201)
          assertRefused(yield* send(user, channelId, 3), 3)
          // the lower of workspace and channel caps is in force
          const workspace = yield* qrLimit(user.workspaceId, undefined, 2)
          assert.deepStrictEqual(workspace, { workspace_id: user.workspaceId, limit: 2, effective_limit: 2 })
          assertRefused(yield* send(user, channelId, 4), 2)
          const channelCleared = yield* qrLimit(user.workspaceId, channelId, "clear")
          assert.strictEqual(channelCleared.limit, "cleared")
          assert.strictEqual(channelCleared.effective_limit, 2)
          assertRefused(yield* send(user, channelId, 5), 2)
          // clearing both restores the platform's 200
          const cleared = yield* qrLimit(user.workspaceId, undefined, "clear")
          assert.deepStrictEqual(cleared, { workspace_id: user.workspaceId, limit: "cleared", effective_limit: 200 })
          assert.strictEqual((yield* send(user, channelId, 6)).status, 201)
        }),
      { timeout: 180_000 }
    )

    it.scoped("the CLI refuses to raise the cap above 200", () =>
      Effect.gen(function*() {
        const { channelId, user } = yield* connectedQrChannel
        const env = yield* cliEnv
        // the refusal is the command line's: it opens no database, and creates none in DATA_DIR
        const scratch = mkdtempSync(join(tmpdir(), "sb-qr-limit-"))
        const dataDir = join(scratch, "data")
        try {
          const run = yield* Effect.promise(() =>
            adminRun(
              ["qr-limit", "--workspace", user.workspaceId, "--channel", channelId, "--limit", "500"],
              Option.getOrElse(env, () => ({ DATA_DIR: dataDir }))
            )
          )
          assert.strictEqual(run.code, 1, run.out)
          assert.strictEqual(run.out, "")
          assert.include(run.err, "never raised above the platform's 200")
          assert.isFalse(existsSync(dataDir), "the refused command created an embedded database")
        } finally {
          rmSync(scratch, { recursive: true, force: true })
        }
        const operator = yield* Effect.flip(
          Effect.flatMap(Operator.Operator, (o) => o.qrLimit(user.workspaceId, undefined, 201)).pipe(
            Effect.provide(TestApp.operatorLayer)
          )
        )
        assert.include(operator.message, "can only be lowered")
        // nothing was stored: the channel still takes sends
        assert.strictEqual((yield* send(user, channelId, 0)).status, 201)
      }), { timeout: 180_000 })

    it.scoped("does not limit sandbox channels", () =>
      Effect.gen(function*() {
        const { key, user } = yield* sandboxSetup(["+4915112345678"])
        // even a workspace cap of 0 leaves its sandbox channel alone
        yield* Effect.flatMap(Operator.Operator, (o) => o.qrLimit(user.workspaceId, undefined, 0)).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const client = yield* api(key)
        for (let i = 0; i < 3; i++) {
          const reply = yield* client.messages.send({
            payload: { to: "+4915112345678", text: { body: `sandbox ${i}` } },
            headers: {}
          })
          assert.strictEqual(reply.text.body, `sandbox ${i}`)
        }
      }))

    it.scoped("refuses a channel cap on a channel that is not a QR channel", () =>
      Effect.gen(function*() {
        const { session, user } = yield* sandboxSetup(["+4915112345678"])
        const refused = yield* Effect.flip(
          Effect.flatMap(Operator.Operator, (o) => o.qrLimit(user.workspaceId, session.channel_id, 10)).pipe(
            Effect.provide(TestApp.operatorLayer)
          )
        )
        assert.include(refused.message, "not a QR channel")
      }))
  })
})
