import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import type { Contacts } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { api, createKey, eventually, refused, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const setup = Effect.gen(function*() {
  const user = yield* signUp()
  const key = yield* createKey(user, { mode: "live" })
  return { user, key: key.secret, client: yield* api(key.secret) }
})

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64")

type Client = Effect.Effect.Success<ReturnType<typeof api>>

const finished = (client: Client, id: Contacts.ContactImport["id"]) =>
  eventually(
    client.contactImports.get({ path: { importId: id } }).pipe(Effect.orDie),
    (i) => i.status === "completed" || i.status === "failed",
    60_000
  )

const eventsOf = (workspaceId: string, type: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ envelope: string }>`SELECT envelope FROM events WHERE workspace_id = ${workspaceId} AND type = ${type}`
        .pipe(
          Effect.map((rows) => rows.map((r) => JSON.parse(r.envelope) as { data: object })),
          Effect.orDie
        )
  )

describe("contact imports", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("imports national numbers, multi-line fields and a BOM with exact counts and row errors", () =>
      Effect.gen(function*() {
        const { client, user } = yield* setup
        const existing = yield* client.contacts.create({ payload: { phone_number: "+4915100000100", name: "Kept" } })
        const group = yield* client.contactGroups.create({ payload: { name: "Imported" } })
        const csv = "\ufeffphone_number,name,email,city\n"
          + "0151 00000101,Ada,ada@example.com,Berlin\n" // national, DE
          + "+4915100000102,\"Multi\nLine\",,\n" // quoted field over two lines
          + "+4915100000100,Existing,,\n" // already a contact: skipped
          + "not a number,Bad,,\n" // invalid number: failed
          + "+4915100000103,Mail,not-an-email,\n" // invalid e-mail: failed
          + "+49 151 00000101,Again,,\n" // repeat of row 1: skipped
          + "+4915100000104,Too,many,columns,here\n" // unreadable row: failed
          + ",Nobody,,\n" // no number: failed
        const [queued, response] = yield* client.contactImports.create({
          payload: { file: b64(csv), default_country: "DE", tags: ["Imported "], group_id: group.id },
          headers: {},
          withResponse: true
        })
        assert.strictEqual(response.status, 202)
        assert.strictEqual(queued.status, "queued")
        assert.strictEqual(queued.total_rows, 8)
        const done = yield* finished(client, queued.id)
        assert.strictEqual(done.status, "completed")
        assert.deepStrictEqual(
          [done.processed_rows, done.created, done.updated, done.skipped, done.failed],
          [8, 2, 0, 2, 4]
        )
        assert.deepStrictEqual(
          done.errors.map((e) => [e.row, e.line, e.column, e.code]),
          [
            [4, 6, "phone_number", "invalid_phone_number"],
            [5, 7, "email", "invalid_email"],
            [6, 8, "phone_number", "duplicate_in_file"],
            [7, 9, null, "invalid_row"],
            [8, 10, "phone_number", "missing_phone_number"]
          ]
        )
        assert.notInclude(JSON.stringify(done.errors), "not-an-email")
        const ada = (yield* client.contacts.list({ urlParams: { q: "+4915100000101" } })).data[0]!
        assert.strictEqual(ada.name, "Ada")
        assert.deepStrictEqual(ada.attributes, { city: "Berlin" })
        assert.deepStrictEqual(ada.tags, ["imported"])
        assert.deepStrictEqual(ada.group_ids, [group.id])
        const multi = (yield* client.contacts.list({ urlParams: { q: "+4915100000102" } })).data[0]!
        assert.strictEqual(multi.name, "Multi\nLine")
        const kept = yield* client.contacts.get({ path: { contactId: existing.id } })
        assert.strictEqual(kept.name, "Kept")
        const completed = yield* eventsOf(user.workspaceId, "contact.import_completed")
        assert.strictEqual(completed.length, 1)
        assert.deepInclude(completed[0]!.data, { created: 2, skipped: 2, failed: 4, total_rows: 8 })
        // one contact.created: the one made through POST /v1/contacts, none per imported row
        assert.strictEqual((yield* eventsOf(user.workspaceId, "contact.created")).length, 1)
        const listed = yield* client.contactImports.list({ urlParams: {} })
        assert.deepStrictEqual(listed.data.map((i) => i.id), [queued.id])
      }))

    it.effect("checks every row with the API's contact rules: limits, U+0000 and bytes that are not UTF-8 fail their row", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const EMOJI = "\u{1F600}"
        const extra = Array.from({ length: 50 }, (_, i) => `a${i}`)
        // phone_number, name, email, note and 50 more attribute columns: 51 attributes when all are filled
        const row = (phone: string, name: string, email = "", note = "", fillExtra = false) =>
          [phone, name, email, note, ...extra.map(() => fillExtra ? "x" : "")].join(",") + "\n"
        const file = Buffer.concat([
          Buffer.from(["phone_number", "name", "email", "note", ...extra].join(",") + "\n"),
          Buffer.from(row("+4915100000201", "Good", "", "short")),
          Buffer.from(row("+4915100000202", EMOJI.repeat(257))),
          Buffer.from(row("+4915100000203", "Long value", "", "v".repeat(1025))),
          Buffer.from(row("+4915100000204", "Nul\u0000Name")),
          Buffer.concat([
            Buffer.from("+4915100000205,Bad"),
            Buffer.from([0xff, 0xfe]),
            Buffer.from(row("", "").slice(1))
          ]),
          Buffer.from(row("+4915100000206", "Many", "", "x", true)),
          Buffer.from(row("+4915100000207", "Mail", `${"m".repeat(300)}@example.com`)),
          Buffer.from(row("+4915100000208", EMOJI.repeat(256), "", "y".repeat(1024)))
        ])
        const queued = yield* client.contactImports.create({ payload: { file: file.toString("base64") }, headers: {} })
        assert.strictEqual(queued.total_rows, 8)
        const done = yield* finished(client, queued.id)
        assert.strictEqual(done.status, "completed")
        assert.deepStrictEqual([done.created, done.failed], [2, 6])
        assert.deepStrictEqual(
          done.errors.map((e) => [e.row, e.column, e.code]),
          [
            [2, "name", "invalid_name"],
            [3, "note", "invalid_attribute"],
            [4, "name", "invalid_text"],
            [5, "name", "invalid_text"],
            [6, null, "too_many_attributes"],
            [7, "email", "invalid_email"]
          ]
        )
        // what an import creates, the API takes back as it is
        const imported = (yield* client.contacts.list({ urlParams: { q: "+4915100000208" } })).data[0]!
        assert.strictEqual(imported.name, EMOJI.repeat(256))
        const patched = yield* client.contacts.update({
          path: { contactId: imported.id },
          payload: { name: imported.name, attributes: imported.attributes }
        })
        assert.deepStrictEqual(patched.attributes, { note: "y".repeat(1024) })
      }))

    it.effect("updates existing contacts with on_conflict update and fails rows beyond the plan", () =>
      Effect.gen(function*() {
        const { client, user } = yield* setup
        yield* client.contacts.create({
          payload: { phone_number: "+4915100000200", name: "Old", attributes: { a: "1" }, tags: ["x"] }
        })
        yield* Effect.flatMap(Operator.Operator, (o) => o.override(user.workspaceId, "contacts", 3)).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const csv = "phone_number,name,b\n+4915100000200,New,2\n+4915100000201,,\n+4915100000202,,\n+4915100000203,,\n"
        const queued = yield* client.contactImports.create({
          payload: { file: b64(csv), on_conflict: "update", tags: ["y"] },
          headers: {}
        })
        const done = yield* finished(client, queued.id)
        assert.deepStrictEqual([done.created, done.updated, done.skipped, done.failed], [2, 1, 0, 1])
        assert.deepStrictEqual(done.errors.map((e) => [e.row, e.code]), [[4, "ENTITLEMENT_LIMIT_REACHED"]])
        const updated = (yield* client.contacts.list({ urlParams: { q: "+4915100000200" } })).data[0]!
        assert.strictEqual(updated.name, "New")
        assert.deepStrictEqual(updated.attributes, { a: "1", b: "2" })
        assert.deepStrictEqual(updated.tags, ["x", "y"])
      }))

    it.effect("refuses oversized files, too many rows, a file without phone_number and an unknown group", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const big = "phone_number\n" + "1".repeat(5 * 1024 * 1024)
        const tooLarge = yield* refused(client.contactImports.create({ payload: { file: b64(big) }, headers: {} }))
        assert.strictEqual(tooLarge.status, 413)
        assert.strictEqual(tooLarge.code, "PAYLOAD_TOO_LARGE")
        const rows = "phone_number\n" + "+4915100000300\n".repeat(50_001)
        const tooMany = yield* refused(client.contactImports.create({ payload: { file: b64(rows) }, headers: {} }))
        assert.strictEqual(tooMany.status, 422)
        assert.strictEqual(tooMany.details["reason"], "too_many_rows")
        const noPhone = yield* refused(
          client.contactImports.create({ payload: { file: b64("name\nAda\n") }, headers: {} })
        )
        assert.strictEqual(noPhone.status, 422)
        assert.strictEqual(noPhone.details["reason"], "missing_phone_number_column")
        const noGroup = yield* refused(client.contactImports.create({
          payload: { file: b64("phone_number\n+4915100000301\n"), group_id: "grp_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" },
          headers: {}
        }))
        assert.strictEqual(noGroup.status, 404)
        const unknown = yield* refused(
          client.contactImports.get({ path: { importId: "imp_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" } })
        )
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.details["resource"], "contact_import")
      }))

    it.effect("replays an import for a repeated Idempotency-Key", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const payload = { file: b64("phone_number\n+4915100000400\n") }
        const first = yield* client.contactImports.create({ payload, headers: { "idempotency-key": "imp-1" } })
        const [again, response] = yield* client.contactImports.create({
          payload,
          headers: { "idempotency-key": "imp-1" },
          withResponse: true
        })
        assert.strictEqual(again.id, first.id)
        assert.strictEqual(response.headers["idempotent-replay"], "true")
        const other = yield* refused(client.contactImports.create({
          payload: { file: b64("phone_number\n+4915100000401\n") },
          headers: { "idempotency-key": "imp-1" }
        }))
        assert.strictEqual(other.code, "IDEMPOTENCY_CONFLICT")
        const done = yield* finished(client, first.id)
        assert.strictEqual(done.created, 1)
      }))

    it.effect("gives up an import whose runs keep failing: failed, counts kept, one event, the queue moves on", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { client, user } = yield* setup
        // a database rule that refuses this workspace's contacts: every run of the import fails
        yield* sql.unsafe(`CREATE OR REPLACE FUNCTION refuse_contacts() RETURNS trigger AS $$
          BEGIN IF NEW.workspace_id = '${user.workspaceId}' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END
          $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER refuse_contacts BEFORE INSERT ON contacts
          FOR EACH ROW EXECUTE FUNCTION refuse_contacts()`)
        const poisoned = yield* client.contactImports.create({
          payload: { file: b64("phone_number\n+4915100000201\n") },
          headers: {}
        })
        const after = yield* client.contactImports.create({
          payload: { file: b64("phone_number\n+4915100000202\n") },
          headers: {}
        })
        const failed = yield* finished(client, poisoned.id)
        yield* sql.unsafe("DROP TRIGGER refuse_contacts ON contacts")
        assert.strictEqual(failed.status, "failed")
        assert.strictEqual(failed.created, 0)
        const events = yield* eventsOf(user.workspaceId, "contact.import_completed")
        assert.deepInclude(events.map((e) => e.data), {
          object: "contact_import",
          object_id: poisoned.id,
          import_id: poisoned.id,
          status: "failed",
          total_rows: 1,
          created: 0,
          updated: 0,
          skipped: 0,
          failed: 0
        })
        // the import queued behind it still runs
        const next = yield* finished(client, after.id)
        assert.strictEqual(next.status, "completed")
        assert.strictEqual(next.created, 1)
      }).pipe(Effect.ensuring(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe("DROP TRIGGER IF EXISTS refuse_contacts ON contacts"))
          .pipe(Effect.orDie)
      )))
  })
})
