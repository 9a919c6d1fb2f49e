/**
 * The limit of the send path (issue 7 §1 b): a bare `node:http` server, no framework, no Effect,
 * that does the durable work of `POST /v1/messages` in ONE transaction on the same database
 * (idempotency row, contact and conversation upsert, message row, timeline row, event row, the
 * stored idempotent response) and answers the same JSON (201, the message). It skips what is not
 * durable work: authentication, the channel / recipient / backlog checks and the entity wake-up.
 *
 * Run as a child process so its CPU can be measured on its own:
 *   DATABASE_URL=... WORKSPACE_ID=ws_... HTTP_PORT=... node --import tsx bench/lib/BareSend.ts
 * It prints `listening <port>` once it accepts requests.
 */
import { clientClass } from "@switchboard/db/PreparedStatements"
import { createServer } from "node:http"
import type { IncomingMessage, ServerResponse } from "node:http"
import pg from "pg"
import { monotonicFactory } from "ulid"

const databaseUrl = process.env["DATABASE_URL"]!
const workspaceId = process.env["WORKSPACE_ID"]!
const port = Number(process.env["HTTP_PORT"] ?? "0")
// the api's default pool size (DATABASE_POOL_SIZE)
const pool = new pg.Pool({
  connectionString: databaseUrl,
  max: Number(process.env["DATABASE_POOL_SIZE"] ?? "10"),
  // named statements from the 5th run of a text, as the api node and the runner do (0: none)
  Client: clientClass(Number(process.env["DATABASE_PREPARE_THRESHOLD"] ?? "5"))
})

const ulid = monotonicFactory()
const newId = (prefix: string) => `${prefix}_${ulid()}`
const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000
const PRIORITY: Record<string, number> = { authentication: 0, utility: 1, marketing: 2 }

/** channel id -> its phone number, read once (the api reads the channel on every send). */
const channelNumbers = new Map<string, string | null>()

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let body = ""
    req.setEncoding("utf8")
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => resolve(body))
    req.on("error", reject)
  })

const answer = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const iso = (value: Date | string | null) => value === null ? null : new Date(value).toISOString()

const send = async (body: any, key: string) => {
  const nowMs = Date.now()
  const now = new Date(nowMs).toISOString()
  const channelId: string = body.channel_id
  if (!channelNumbers.has(channelId)) {
    const rows = await pool.query("SELECT phone_number FROM channels WHERE id = $1 AND workspace_id = $2", [
      channelId,
      workspaceId
    ])
    if (!rows.rows[0]) return { status: 404, body: { error: { code: "CHANNEL_NOT_FOUND" } } }
    channelNumbers.set(channelId, rows.rows[0].phone_number)
  }
  const from = channelNumbers.get(channelId) ?? null
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    const result = await work(client, { body, key, from, now, nowMs })
    await client.query(result.status === 201 ? "COMMIT" : "ROLLBACK")
    return result
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
}

interface Send {
  readonly body: any
  readonly key: string
  readonly from: string | null
  readonly now: string
  readonly nowMs: number
}
type Answer = { readonly status: number; readonly body: unknown }

/** One send's statements, inside a transaction the caller opened and ends. */
const work = async (client: pg.PoolClient, { body, from, key, now, nowMs }: Send): Promise<Answer> => {
  const channelId: string = body.channel_id
  const category: string = body.category ?? "utility"
  {
    const claimed = await client.query(
      `INSERT INTO idempotency_keys (workspace_id, key, fingerprint, state, created_at, expires_at)
       VALUES ($1, $2, $3, 'running', $4, $5) ON CONFLICT (workspace_id, key) DO NOTHING RETURNING key`,
      [workspaceId, key, "bare", now, new Date(nowMs + IDEMPOTENCY_TTL_MS).toISOString()]
    )
    if (claimed.rowCount === 0) return { status: 409, body: { error: { code: "IDEMPOTENCY_CONFLICT" } } }
    let contactId: string
    const contact = await client.query("SELECT id FROM contacts WHERE workspace_id = $1 AND phone_number = $2", [
      workspaceId,
      body.to
    ])
    if (contact.rows[0]) {
      contactId = contact.rows[0].id
    } else {
      contactId = newId("cnt")
      const inserted = await client.query(
        `INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT (workspace_id, phone_number) DO NOTHING RETURNING id`,
        [contactId, workspaceId, body.to, now]
      )
      if (!inserted.rows[0]) {
        const again = await client.query("SELECT id FROM contacts WHERE workspace_id = $1 AND phone_number = $2", [
          workspaceId,
          body.to
        ])
        contactId = again.rows[0].id
      }
    }
    let conversationId: string
    const open = await client.query(
      `UPDATE conversations SET last_message_at = $1, updated_at = $1
       WHERE channel_id = $2 AND contact_id = $3 AND status = 'open' RETURNING id`,
      [now, channelId, contactId]
    )
    if (open.rows[0]) {
      conversationId = open.rows[0].id
    } else {
      conversationId = newId("cnv")
      await client.query(
        `INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, last_message_at, created_at,
           updated_at) VALUES ($1, $2, $3, $4, 'open', $5, $5, $5)`,
        [conversationId, workspaceId, channelId, contactId, now]
      )
    }
    const messageId = newId("msg")
    const inserted = await client.query(
      `INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction, from_number,
         to_number, type, body, category, priority, status, metadata, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'outbound', $6, $7, 'text', $8, $9, $10, 'queued', $11::jsonb, $12, $12)
       RETURNING *`,
      [
        messageId,
        workspaceId,
        channelId,
        conversationId,
        contactId,
        from,
        body.to,
        body.text?.body ?? "",
        category,
        PRIORITY[category] ?? 1,
        JSON.stringify(body.metadata ?? {}),
        now
      ]
    )
    await client.query(
      "INSERT INTO message_transitions (message_id, from_state, to_state, at) VALUES ($1, NULL, 'queued', $2)",
      [messageId, now]
    )
    const eventId = newId("evt")
    const envelope = JSON.stringify({
      id: eventId,
      type: "message.queued",
      created_at: now,
      workspace_id: workspaceId,
      data: {
        object: "message",
        object_id: messageId,
        message_id: messageId,
        from_state: null,
        to_state: "queued",
        category
      }
    })
    await client.query(
      `INSERT INTO events (id, workspace_id, type, object_id, envelope, is_test, created_at)
       VALUES ($1, $2, 'message.queued', $3, $4, false, $5)`,
      [eventId, workspaceId, messageId, envelope, now]
    )
    const r = inserted.rows[0]
    const message = {
      id: r.id,
      object: "message",
      workspace_id: r.workspace_id,
      channel_id: r.channel_id,
      conversation_id: r.conversation_id,
      contact_id: r.contact_id,
      direction: r.direction,
      from: r.from_number ?? null,
      to: r.to_number,
      type: r.type,
      text: { body: r.body },
      template: r.template ?? null,
      category: r.category,
      status: r.status,
      failure: r.failure ?? null,
      metadata: r.metadata ?? {},
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
      sent_at: iso(r.sent_at),
      delivered_at: iso(r.delivered_at),
      read_at: iso(r.read_at)
    }
    await client.query(
      "UPDATE idempotency_keys SET state = 'done', response = $3::jsonb WHERE workspace_id = $1 AND key = $2",
      [workspaceId, key, JSON.stringify(message)]
    )
    return { status: 201, body: message }
  }
}

const server = createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/v1/messages") return answer(res, 404, { error: { code: "NOT_FOUND" } })
  readBody(req)
    .then((text) => send(JSON.parse(text), String(req.headers["idempotency-key"])))
    .then(({ body, status }) => answer(res, status, body))
    .catch(() => answer(res, 500, { error: { code: "INTERNAL" } }))
})
server.keepAliveTimeout = 60_000
server.listen(port, "127.0.0.1", () => {
  const address = server.address()
  console.log(`listening ${typeof address === "object" && address ? address.port : port}`)
})
process.on("SIGTERM", () => {
  server.close()
  void pool.end().then(() => process.exit(0))
})
