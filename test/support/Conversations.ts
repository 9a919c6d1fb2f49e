/** Helpers of the conversation tests: a thread to work on, the inbound simulation, its events. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { api, eventually, request, sandboxSetup } from "./Fixtures.js"

export const TO = "+4915112345678"
export const OTHER = "+4915112345679"

/** A sandbox workspace with a conversation with `TO` (opened by a send). */
export const thread = Effect.gen(function*() {
  const setup = yield* sandboxSetup([TO, OTHER])
  const client = yield* api(setup.key)
  const sent = yield* client.messages.send({ payload: { to: TO, text: { body: "hello" } }, headers: {} })
  return { ...setup, client, sent, conversationId: sent.conversation_id }
})

/** The contact writes through the simulated network; waits until the message is recorded. */
export const inbound = (key: string, sessionId: string, from: string, body: string) =>
  Effect.gen(function*() {
    const client = yield* api(key)
    const count = () =>
      Effect.map(
        client.messages.list({ urlParams: { direction: "inbound", limit: 100 } }),
        (page) => page.data.filter((m) => m.text.body === body).length
      )
    const reply = yield* request("POST", `/v1/sandbox/sessions/${sessionId}/inbound`, {
      token: key,
      body: { from, text: { body } }
    })
    if (reply.status !== 202) return yield* Effect.dieMessage(`inbound: ${reply.status} ${reply.text}`)
    yield* eventually(count(), (n) => n > 0)
  })

/** The events about a conversation, in the order they were appended: type and data. */
export const eventsOf = (conversationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ type: string; envelope: string }>`SELECT type, envelope FROM events
      WHERE object_id = ${conversationId} ORDER BY id`
    return rows.map((r) => ({ type: r.type, data: JSON.parse(r.envelope).data }))
  }).pipe(Effect.orDie)
