/**
 * The send path's statements on effect 4's `effect/sql`, the same SQL as the project's
 * packages/db (effect 3): `ApiKeysRepo.findBySecretHash`, `IdempotencyRepo.begin` / `release`,
 * `SendChecksRepo.facts` and `SendWritesRepo`'s one statement with `EventsRepo.outboxCtes`
 * (events, webhook deliveries, endpoint wake-ups) and the stored idempotent response. The
 * statements' texts are copied; the event envelopes are built here, not by the domain's event
 * classes (the same members, not checked by a schema).
 */
import type { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"

const WEBHOOK_WAKE_CHANNEL = "webhook_deliveries_due"

export interface SendMessage {
  readonly id: string
  readonly workspaceId: string
  readonly channelId: string
  readonly conversationId: string
  readonly contactId: string
  readonly from: string | null
  readonly to: string
  readonly body: string
  readonly category: string
  readonly priority: number
  readonly metadata: Record<string, string>
  readonly now: string
}

export interface Claim {
  readonly key: string
  readonly claimId: string
  readonly response: unknown
}

interface Template {
  readonly parts: ReadonlyArray<string>
  readonly slots: ReadonlyArray<string>
}

const SLOT = `\u0000${Math.random().toString(36).slice(2)}:`

/** `EventsRepo.envelopeTemplate`: the envelope's text around the members the statement fills in. */
const template = (envelope: unknown, open: ReadonlyArray<string>): Template => {
  const slots: Array<string> = []
  const text = JSON.stringify(envelope, (key, value) => {
    if (typeof value !== "string" || !open.includes(key)) return value
    slots.push(key)
    return `${SLOT}${slots.length - 1}`
  })
  const parts: Array<string> = []
  let from = 0
  slots.forEach((_, i) => {
    const marker = JSON.stringify(`${SLOT}${i}`)
    const at = text.indexOf(marker, from)
    parts.push(text.slice(from, at))
    from = at + marker.length
  })
  parts.push(text.slice(from))
  return { parts, slots }
}

export const make = (sql: SqlClient.SqlClient) => {
  const envelopeSql = (t: Template, values: Record<string, Fragment>) => {
    const pieces: Array<Fragment> = [sql`${t.parts[0]!}::text`]
    t.slots.forEach((slot, i) => pieces.push(sql`to_json(${values[slot]!})::text`, sql`${t.parts[i + 1]!}::text`))
    return sql.join(" || ", true)(pieces)
  }

  const outboxCtes = (source: Fragment) =>
    sql`outbox_event AS (
          INSERT INTO events (id, workspace_id, type, object_id, envelope, is_test, created_at)
          SELECT id, workspace_id, type, object_id, envelope, false, created_at FROM (${source}) AS source
          RETURNING id, workspace_id, type, created_at
        ), outbox_delivery AS (
          INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, next_attempt_at,
            created_at, updated_at)
          SELECT 'whd_' || substr(ev.id, 5, 10) || ulid_random_part(), e.id, ev.workspace_id, ev.id, ev.type, 'pending',
            ev.created_at, ev.created_at, ev.created_at
          FROM outbox_event ev JOIN webhook_endpoints e ON e.workspace_id = ev.workspace_id AND e.deleted_at IS NULL
            AND e.status IN ('active', 'paused') AND (ev.type = ANY(e.event_types) OR '*' = ANY(e.event_types))
          RETURNING endpoint_id
        ), outbox_wake AS (
          SELECT pg_notify(${WEBHOOK_WAKE_CHANNEL}, e.id) FROM webhook_endpoints e
          WHERE e.status = 'active' AND e.id IN (SELECT endpoint_id FROM outbox_delivery)
        )`

  const findKey = (hash: string) =>
    sql<
      {
        id: string
        workspace_id: string
        mode: string
        scopes: Array<string>
        revoked_at: unknown
        expires_at: Date | string | null
        workspace_status: string
      }
    >`
        SELECT k.*, w.status AS workspace_status FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
        WHERE k.secret_hash = ${hash}`

  const begin = (i: {
    workspaceId: string
    key: string
    claimId: string
    fingerprint: string
    now: string
    expiresAt: string
    leaseUntil: string
  }) =>
    sql`INSERT INTO idempotency_keys
          (workspace_id, key, fingerprint, state, created_at, expires_at, claim_id, lease_until)
        VALUES (${i.workspaceId}, ${i.key}, ${i.fingerprint}, 'running', ${i.now}, ${i.expiresAt},
          ${i.claimId}, ${i.leaseUntil})
        ON CONFLICT (workspace_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, state = 'running',
          response = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
          claim_id = EXCLUDED.claim_id, lease_until = EXCLUDED.lease_until
        WHERE idempotency_keys.expires_at <= ${i.now}
          OR (idempotency_keys.state = 'running'
            AND COALESCE(idempotency_keys.lease_until, idempotency_keys.created_at + interval '60 seconds') < ${i.now})
        RETURNING key`

  const existing = (workspaceId: string, key: string) =>
    sql<{ fingerprint: string; state: string; response: unknown }>`
        SELECT fingerprint, state, response FROM idempotency_keys WHERE workspace_id = ${workspaceId} AND key = ${key}`

  const release = (workspaceId: string, key: string, claimId: string) =>
    sql`DELETE FROM idempotency_keys
        WHERE workspace_id = ${workspaceId} AND key = ${key} AND claim_id = ${claimId}
          AND state = 'running'`

  const facts = (i: { workspaceId: string; channelId: string | undefined; to: string; now: string }) =>
    sql<{
      id: string
      provider: string
      status: string
      phone_number: string | null
      capabilities: { max_throughput_mps: number; message_types: Array<string> } | null
      sandbox_usable: boolean
      recipient_verified: boolean
      queued: number
      plan: string
      overrides: Record<string, unknown>
    }>`
        SELECT c.*,
          (c.provider = 'sandbox' AND EXISTS (SELECT 1 FROM sandbox_sessions s WHERE s.channel_id = c.id
            AND s.status = 'active' AND s.expires_at > ${i.now})) AS sandbox_usable,
          (c.provider = 'sandbox' AND EXISTS (SELECT 1 FROM sandbox_recipients r
            JOIN sandbox_sessions s ON s.id = r.session_id
            WHERE s.channel_id = c.id AND r.phone_number = ${i.to})) AS recipient_verified,
          (SELECT COALESCE(sum(q.queued), 0)::int FROM channel_queue_counts q WHERE q.channel_id = c.id) AS queued,
          (SELECT w.plan FROM workspaces w WHERE w.id = c.workspace_id) AS plan,
          (SELECT COALESCE(jsonb_object_agg(o.entitlement, o.value), '{}'::jsonb) FROM entitlement_overrides o
            WHERE o.workspace_id = c.workspace_id) AS overrides
        FROM channels c
        WHERE c.workspace_id = ${i.workspaceId}
          AND ${i.channelId === undefined ? sql`c.is_default AND c.archived_at IS NULL` : sql`c.id = ${i.channelId}`}`

  /** `SendWritesRepo`'s events: contact created, the conversation's arrival, message queued. */
  const emitted = (m: SendMessage, ids: ReadonlyArray<string>) => {
    const selects: Array<Fragment> = []
    const envelope = (id: string, type: string, data: unknown) => ({
      id,
      type,
      created_at: m.now,
      workspace_id: m.workspaceId,
      data
    })
    const add = (
      id: string,
      type: string,
      objectId: Fragment,
      when: Fragment,
      data: unknown,
      open: Record<string, Fragment> = {}
    ) =>
      selects.push(
        sql`SELECT ${id}::text AS id, ${type}::text AS type, ${objectId} AS object_id, ${
          envelopeSql(template(envelope(id, type, data), Object.keys(open)), open)
        } AS envelope FROM outcome o WHERE ${when}`
      )
    add(ids[0]!, "contact.created", sql`${m.contactId}::text`, sql`o.contact_created`, {
      object: "contact",
      object_id: m.contactId,
      contact_id: m.contactId
    })
    const open = {
      object_id: sql`o.conversation_id`,
      conversation_id: sql`o.conversation_id`,
      contact_id: sql`o.contact_id`
    }
    for (const [prior, type] of [[null, "conversation.created"], ["closed", "conversation.reopened"]] as const) {
      add(ids[1]!, type, sql`o.conversation_id`, prior === null ? sql`o.prior IS NULL` : sql`o.prior = ${prior}`, {
        object: "conversation",
        object_id: "x",
        conversation_id: "x",
        channel_id: m.channelId,
        contact_id: "x",
        direction: "outbound"
      }, open)
    }
    add(ids[2]!, "message.queued", sql`${m.id}::text`, sql`true`, {
      object: "message",
      object_id: m.id,
      message_id: m.id,
      from_state: null,
      to_state: "queued",
      category: m.category
    })
    return sql.join(" UNION ALL ", false)(selects)
  }

  const write = (m: SendMessage, claim: Claim, limit: number | null, events: Fragment) =>
    sql<
      {
        claimed: boolean
        contacts_used: number | null
        contact_id: string | null
        contact_created: boolean | null
        conversation_id: string | null
      }
    >`WITH claim AS (
          SELECT key FROM idempotency_keys WHERE workspace_id = ${m.workspaceId} AND key = ${claim.key}
            AND claim_id = ${claim.claimId} AND state = 'running' FOR UPDATE
        ), go AS (SELECT EXISTS (SELECT 1 FROM claim) AS ok), found AS (
          SELECT id FROM contacts WHERE workspace_id = ${m.workspaceId} AND phone_number = ${m.to}
        ), room AS (
          SELECT CASE WHEN ${limit}::int IS NULL OR EXISTS (SELECT 1 FROM found) THEN NULL
            ELSE (SELECT count(*)::int FROM contacts WHERE workspace_id = ${m.workspaceId}) END AS used
        ), new_contact AS (
          INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at)
          SELECT ${m.contactId}, ${m.workspaceId}, ${m.to}, ${m.now}, ${m.now} FROM go, room
          WHERE go.ok AND NOT EXISTS (SELECT 1 FROM found) AND (room.used IS NULL OR room.used < ${limit}::int)
          ON CONFLICT (workspace_id, phone_number) DO NOTHING
          RETURNING id
        ), contact AS (
          SELECT id, false AS created FROM found, go WHERE go.ok UNION ALL SELECT id, true FROM new_contact
        ), current AS (
          SELECT id, status FROM conversations
          WHERE channel_id = ${m.channelId} AND contact_id = (SELECT id FROM contact) FOR UPDATE
        ), moved AS (
          UPDATE conversations c SET status = 'open', updated_at = ${m.now},
            last_message_at = GREATEST(c.last_message_at, ${m.now})
          FROM current WHERE c.id = current.id
          RETURNING c.id, current.status AS prior
        ), opened AS (
          INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, last_message_at,
            last_inbound_at, created_at, updated_at)
          SELECT ${m.conversationId}, ${m.workspaceId}, ${m.channelId}, contact.id, 'open', ${m.now}, NULL,
            ${m.now}, ${m.now}
          FROM contact WHERE NOT EXISTS (SELECT 1 FROM current)
          ON CONFLICT (channel_id, contact_id) DO NOTHING
          RETURNING id, NULL::text AS prior
        ), conversation AS (
          SELECT id, prior FROM moved UNION ALL SELECT id, prior FROM opened
        ), message AS (
          INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction,
            from_number, to_number, type, body, template, category, priority, status, metadata, created_at, updated_at,
            content, reply_to, media_id, media_status)
          SELECT ${m.id}, ${m.workspaceId}, ${m.channelId}, conversation.id, contact.id, 'outbound',
            ${m.from}, ${m.to}, ${"text"}, ${m.body},
            ${null}::jsonb, ${m.category}, ${m.priority},
            'queued', ${JSON.stringify(m.metadata)}::jsonb, ${m.now}, ${m.now},
            ${null}::jsonb, ${null}, ${null}, ${null}
          FROM contact, conversation
          RETURNING id, contact_id, conversation_id
        ), timeline AS (
          INSERT INTO message_transitions (message_id, from_state, to_state, at)
          SELECT id, NULL, 'queued', ${m.now} FROM message
        ), outcome AS (
          SELECT m.contact_id, m.conversation_id, c.created AS contact_created, v.prior
          FROM message m, contact c, conversation v
        ), emitted AS (
          ${events}
        ), ${
      outboxCtes(
        sql`SELECT id, ${m.workspaceId}::text AS workspace_id, type, object_id, envelope, ${m.now}::timestamptz AS created_at
            FROM emitted`
      )
    }, stored AS (
          UPDATE idempotency_keys k SET state = 'done', response = jsonb_set(jsonb_set(${
      JSON.stringify(claim.response)
    }::jsonb, '{contact_id}', to_jsonb(o.contact_id)), '{conversation_id}', to_jsonb(o.conversation_id))
          FROM outcome o
          WHERE k.workspace_id = ${m.workspaceId} AND k.key = ${claim.key} AND k.claim_id = ${claim.claimId}
            AND k.state = 'running'
        )
        SELECT go.ok AS claimed, room.used AS contacts_used, o.contact_id, o.contact_created, o.conversation_id,
          (SELECT count(*) FROM outbox_wake) AS woken
        FROM go, room LEFT JOIN outcome o ON true`

  return { findKey, begin, existing, release, facts, emitted, write }
}

export type SendSql = ReturnType<typeof make>
