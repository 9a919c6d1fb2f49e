/**
 * Sandbox sessions end 72 h after creation: the sandbox sweeper (run here with a clock the test
 * sets) records them expired, archives their channel and frees the number; a session past its
 * expiry that no sweep has reached yet already refuses sends and verification, and its number is
 * allocated again (never a 500).
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ChannelsRepo, SandboxRepo } from "@switchboard/db"
import { SandboxSweeper } from "@switchboard/entities"
import type { Client } from "@switchboard/sdk"
import { Clock, Duration, Effect } from "effect"
import { api, createKey, refused, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

/** The only number of the pool: every allocation competes for it. */
const NUMBER = "+15550309999"
const PHONE = "+4915112345678"

/** A clock that reads `ms` (sleeps still take real time). */
const clockAt = (ms: number): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => ms,
  unsafeCurrentTimeNanos: () => BigInt(ms) * 1_000_000n,
  currentTimeMillis: Effect.sync(() => ms),
  currentTimeNanos: Effect.sync(() => BigInt(ms) * 1_000_000n),
  sleep: (duration) =>
    Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, Duration.toMillis(duration))))
})

const sweepAt = (ms: number) =>
  SandboxSweeper.sweepSandboxSessions.pipe(
    Effect.withClock(clockAt(ms)),
    Effect.provide([SandboxRepo.SandboxRepo.Default, ChannelsRepo.ChannelsRepo.Default])
  )

/** A workspace with a test key and a session on the pool's number, `PHONE` verified. */
const newSession = Effect.gen(function*() {
  const client = yield* api((yield* createKey(yield* signUp(), { mode: "test" })).secret)
  // the typed client decodes the declared 201 and 200 only
  const session = yield* client.sandbox.create()
  yield* client.sandbox.verify({
    path: { sessionId: session.id },
    payload: { phone_number: PHONE, code: session.verification.code }
  })
  return { client, session }
})

const send = (client: Client, channelId: `ch_${string}`) =>
  client.messages.send({ payload: { channel_id: channelId, to: PHONE, text: { body: "hi" } }, headers: {} })

describe("sandbox session expiry", () => {
  layer(TestApp.layer({}, { providers: { sandboxNumbers: [NUMBER] } }), {
    excludeTestServices: true,
    timeout: 120_000
  })(
    (it) => {
      it.effect("the sweeper expires a session at its expiry, archives its channel and frees the number", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const { client, session } = yield* newSession
          const sessionPath = { sessionId: session.id }
          yield* send(client, session.channel_id)
          const expiresAt = Date.parse(session.expires_at)

          // a second before the expiry nothing ends
          assert.deepStrictEqual(yield* sweepAt(expiresAt - 1000), { expired: 0, archived: 0 })
          assert.strictEqual((yield* client.sandbox.get({ path: sessionPath })).status, "active")

          const swept = yield* sweepAt(expiresAt + 1000)
          assert.deepStrictEqual(swept, { expired: 1, archived: 1 })
          const after = yield* client.sandbox.get({ path: sessionPath })
          assert.strictEqual(after.status, "expired")
          const channel = yield* client.channels.get({ path: { channelId: session.channel_id } })
          assert.strictEqual(channel.status, "archived")
          const events = yield* sql<
            { from_status: string }
          >`SELECT envelope::jsonb->'data'->>'from_status' AS from_status
            FROM events WHERE type = 'channel.archived' AND object_id = ${session.channel_id}`
          assert.deepStrictEqual(events.map((e) => e.from_status), ["connected"])

          const ended = yield* refused(send(client, session.channel_id))
          assert.strictEqual(ended.status, 409)
          assert.strictEqual(ended.code, "CHANNEL_NOT_CONNECTED")

          // the number is free again: another workspace gets it
          const next = yield* newSession
          assert.notStrictEqual(next.session.id, session.id)
          // a second sweep finds nothing more to do for the first session
          yield* sweepAt(expiresAt + 2000)
          const again =
            yield* sql`SELECT 1 FROM events WHERE type = 'channel.archived' AND object_id = ${session.channel_id}`
          assert.strictEqual(again.length, 1)
          yield* next.client.sandbox.revoke({ path: { sessionId: next.session.id } })
        }))

      it.effect("a session past its expiry that no sweep reached refuses sends and verification; its number is allocated again", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const { client, session } = yield* newSession
          // the session's 72 h are up (its expiry moved into the past; no sweep has run)
          yield* sql`UPDATE sandbox_sessions SET expires_at = now() - interval '1 minute' WHERE id = ${session.id}`

          const read = yield* client.sandbox.get({ path: { sessionId: session.id } })
          assert.strictEqual(read.status, "expired")
          const ended = yield* refused(send(client, session.channel_id))
          assert.strictEqual(ended.status, 409)
          assert.strictEqual(ended.code, "CHANNEL_NOT_CONNECTED")
          assert.strictEqual(ended.details.reason, "sandbox_session_ended")
          const verify = yield* refused(client.sandbox.verify({
            path: { sessionId: session.id },
            payload: { phone_number: "+4915199999999", code: "123456" }
          }))
          assert.strictEqual(verify.status, 422)
          assert.strictEqual(verify.details.reason, "session_not_active")

          // allocation takes the number back at once (was a 500 on the unique index)
          const other = yield* newSession
          assert.strictEqual(other.session.id.startsWith("sbx_"), true)
          // the sweep archives the ended session's channel
          yield* sweepAt(Date.now())
          const channel = yield* client.channels.get({ path: { channelId: session.channel_id } })
          assert.strictEqual(channel.status, "archived")
        }))
    }
  )
})
