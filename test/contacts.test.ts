import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { api, createKey, refused, request, sandboxSetup, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const setup = Effect.gen(function*() {
  const user = yield* signUp()
  const key = yield* createKey(user, { mode: "live" })
  return { user, key: key.secret, client: yield* api(key.secret) }
})

const eventTypes = (objectId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ type: string }>`SELECT type FROM events WHERE object_id = ${objectId} ORDER BY created_at, id`.pipe(
        Effect.map((rows) => rows.map((r) => r.type)),
        Effect.orDie
      )
  )

describe("contacts", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("creates, reads, updates and deletes a contact, with one event each", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const [created, response] = yield* client.contacts.create({
          payload: {
            phone_number: "+4915100000001",
            name: "Ada Lovelace",
            email: "ada@example.com",
            attributes: { plan: "gold" },
            tags: [" VIP ", "vip", "Berlin"]
          },
          withResponse: true
        })
        assert.strictEqual(response.status, 201)
        assert.strictEqual(created.object, "contact")
        assert.deepStrictEqual(created.tags, ["vip", "berlin"])
        assert.deepStrictEqual(created.attributes, { plan: "gold" })
        assert.deepStrictEqual(created.group_ids, [])
        const read = yield* client.contacts.get({ path: { contactId: created.id } })
        assert.deepStrictEqual(read, created)
        const updated = yield* client.contacts.update({
          path: { contactId: created.id },
          payload: { name: null, tags: ["Customer"] }
        })
        assert.strictEqual(updated.name, null)
        assert.strictEqual(updated.email, "ada@example.com")
        assert.deepStrictEqual(updated.tags, ["customer"])
        const deleted = yield* client.contacts.delete({ path: { contactId: created.id } })
        assert.deepStrictEqual(deleted, { id: created.id, object: "contact", deleted: true })
        const gone = yield* refused(client.contacts.get({ path: { contactId: created.id } }))
        assert.strictEqual(gone.status, 404)
        assert.strictEqual(gone.details["resource"], "contact")
        const again = yield* refused(client.contacts.delete({ path: { contactId: created.id } }))
        assert.strictEqual(again.status, 404)
        assert.deepStrictEqual(yield* eventTypes(created.id), ["contact.created", "contact.updated", "contact.deleted"])
      }))

    it.effect("turns 20 parallel creates of one number into one contact and 19 conflicts naming it", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const results = yield* Effect.all(
          Array.from(
            { length: 20 },
            () => Effect.either(client.contacts.create({ payload: { phone_number: "+4915100000002" } }))
          ),
          { concurrency: "unbounded" }
        )
        const created = results.flatMap((r) => r._tag === "Right" ? [r.right] : [])
        assert.strictEqual(created.length, 1)
        const conflicts = yield* Effect.all(
          results.flatMap((r) => r._tag === "Left" ? [refused(Effect.fail(r.left))] : [])
        )
        assert.strictEqual(conflicts.length, 19)
        for (const c of conflicts) {
          assert.strictEqual(c.status, 409)
          assert.strictEqual(c.code, "CONFLICT")
          assert.strictEqual(c.details["id"], created[0]!.id)
        }
        const page = yield* client.contacts.list({ urlParams: { q: "+4915100000002" } })
        assert.strictEqual(page.data.length, 1)
      }))

    it.effect("filters by tag, group and q, and pages newest first", () =>
      Effect.gen(function*() {
        const { client, key } = yield* setup
        const group = yield* client.contactGroups.create({ payload: { name: "Berlin" } })
        const a = yield* client.contacts.create({
          payload: { phone_number: "+4915100000011", name: "Grace Hopper", tags: ["VIP"], group_ids: [group.id] }
        })
        const b = yield* client.contacts.create({
          payload: { phone_number: "+4915100000012", email: "LIN@Example.org" }
        })
        const c = yield* client.contacts.create({ payload: { phone_number: "+4915100000013", name: "100% Real" } })
        const ids = (page: { readonly data: ReadonlyArray<{ readonly id: string }> }) => page.data.map((x) => x.id)
        assert.deepStrictEqual(ids(yield* client.contacts.list({ urlParams: { tag: " vip" } })), [a.id])
        assert.deepStrictEqual(ids(yield* client.contacts.list({ urlParams: { group_id: group.id } })), [a.id])
        assert.deepStrictEqual(ids(yield* client.contacts.list({ urlParams: { q: "HOPP" } })), [a.id])
        assert.deepStrictEqual(ids(yield* client.contacts.list({ urlParams: { q: "lin@example" } })), [b.id])
        assert.deepStrictEqual(ids(yield* client.contacts.list({ urlParams: { q: "00000013" } })), [c.id])
        // LIKE wildcards match themselves
        assert.deepStrictEqual(ids(yield* client.contacts.list({ urlParams: { q: "0%" } })), [c.id])
        assert.deepStrictEqual(ids(yield* client.contacts.list({ urlParams: { q: "_" } })), [])
        const first = yield* client.contacts.list({ urlParams: { limit: 2 } })
        assert.deepStrictEqual(ids(first), [c.id, b.id])
        assert.isTrue(first.page.has_more)
        // the cursor is opaque: sent back as the string it came as
        // raw: the test sends next_cursor back as the exact string it came as (the typed client re-encodes it)
        const second = yield* request("GET", `/v1/contacts?limit=2&after=${first.page.next_cursor}`, { token: key })
        assert.deepStrictEqual(ids(second.body), [a.id])
        assert.isFalse(second.body.page.has_more)
        const unknownGroup = yield* refused(
          client.contacts.list({ urlParams: { group_id: "grp_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" } })
        )
        assert.strictEqual(unknownGroup.status, 404)
        assert.strictEqual(unknownGroup.details["resource"], "contact_group")
      }))

    it.effect("refuses bad input, unknown groups, a taken number on update and contacts beyond the plan", () =>
      Effect.gen(function*() {
        const { client, key, user } = yield* setup
        // raw: the test searches the whole answer for the number it sent (never echoed)
        const bad = yield* request("POST", "/v1/contacts", { token: key, body: { phone_number: "0151 1234" } })
        assert.strictEqual(bad.status, 422)
        assert.notInclude(bad.text, "0151 1234")
        // raw: an unknown member is a body the typed client would not send
        const extra = yield* request("POST", "/v1/contacts", {
          token: key,
          body: { phone_number: "+4915100000021", nickname: "x" }
        })
        assert.strictEqual(extra.status, 422)
        const noGroup = yield* refused(client.contacts.create({
          payload: { phone_number: "+4915100000021", group_ids: ["grp_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"] }
        }))
        assert.strictEqual(noGroup.status, 404)
        assert.strictEqual(noGroup.details["resource"], "contact_group")
        const first = yield* client.contacts.create({ payload: { phone_number: "+4915100000021" } })
        const second = yield* client.contacts.create({ payload: { phone_number: "+4915100000022" } })
        const taken = yield* refused(client.contacts.update({
          path: { contactId: second.id },
          payload: { phone_number: "+4915100000021" }
        }))
        assert.strictEqual(taken.status, 409)
        assert.strictEqual(taken.details["id"], first.id)
        // raw: an empty patch is a body the typed client would not send
        const empty = yield* request("PATCH", `/v1/contacts/${second.id}`, { token: key, body: {} })
        assert.strictEqual(empty.status, 422)
        yield* Effect.flatMap(Operator.Operator, (o) => o.override(user.workspaceId, "contacts", 2)).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const over = yield* refused(client.contacts.create({ payload: { phone_number: "+4915100000023" } }))
        assert.strictEqual(over.status, 409)
        assert.strictEqual(over.code, "ENTITLEMENT_LIMIT_REACHED")
        assert.strictEqual(over.details["entitlement"], "contacts")
        const page = yield* client.contacts.list({ urlParams: {} })
        assert.strictEqual(page.data.length, 2)
      }))

    it.effect("keeps a deleted contact's messages readable with their contact_id", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup(["+4915100000031"])
        const client = yield* api(key)
        const sent = yield* client.messages.send({
          payload: { to: "+4915100000031", text: { body: "hi" } },
          headers: {}
        })
        const listed = yield* client.contacts.list({ urlParams: { q: "+4915100000031" } })
        assert.strictEqual(listed.data[0]!.id, sent.contact_id)
        yield* client.contacts.delete({ path: { contactId: sent.contact_id! } })
        const message = yield* client.messages.get({ path: { messageId: sent.id } })
        assert.strictEqual(message.contact_id, sent.contact_id)
        const next = yield* client.messages.send({
          payload: { to: "+4915100000031", text: { body: "again" } },
          headers: {}
        })
        assert.notStrictEqual(next.contact_id, sent.contact_id)
      }))

    it.effect("manages groups and their members idempotently, and counts tags", () =>
      Effect.gen(function*() {
        const { client, key } = yield* setup
        const group = yield* client.contactGroups.create({ payload: { name: "Customers", description: "paying" } })
        assert.strictEqual(group.member_count, 0)
        const dup = yield* refused(client.contactGroups.create({ payload: { name: "customers" } }))
        assert.strictEqual(dup.status, 409)
        assert.strictEqual(dup.details["reason"], "name_taken")
        const a = yield* client.contacts.create({ payload: { phone_number: "+4915100000041", tags: ["A", "b"] } })
        const b = yield* client.contacts.create({ payload: { phone_number: "+4915100000042", tags: ["a"] } })
        const path = { groupId: group.id }
        const added = yield* client.contactGroups.addMembers({ path, payload: { contact_ids: [a.id, b.id, a.id] } })
        assert.strictEqual(added.member_count, 2)
        const repeated = yield* client.contactGroups.addMembers({ path, payload: { contact_ids: [a.id] } })
        assert.strictEqual(repeated.member_count, 2)
        const unknown = yield* refused(client.contactGroups.addMembers({
          path,
          payload: { contact_ids: [a.id, "cnt_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"] }
        }))
        assert.strictEqual(unknown.status, 404)
        assert.deepStrictEqual(unknown.details["issues"][0].path, ["contact_ids", 1])
        assert.deepStrictEqual((yield* client.contacts.get({ path: { contactId: a.id } })).group_ids, [group.id])
        const removed = yield* client.contactGroups.removeMember({ path: { groupId: group.id, contactId: a.id } })
        assert.strictEqual(removed.member_count, 1)
        const removedAgain = yield* client.contactGroups.removeMember({ path: { groupId: group.id, contactId: a.id } })
        assert.strictEqual(removedAgain.member_count, 1)
        const renamed = yield* client.contactGroups.update({ path, payload: { name: "Clients", description: null } })
        assert.strictEqual(renamed.name, "Clients")
        assert.strictEqual(renamed.description, null)
        const list = yield* client.contactGroups.list({ urlParams: {} })
        assert.deepStrictEqual(list.data.map((g) => g.id), [group.id])
        const tags = yield* client.contacts.tags({ urlParams: {} })
        assert.deepStrictEqual(tags.data.map((t) => [t.tag, t.contact_count]), [["a", 2], ["b", 1]])
        yield* client.contactGroups.delete({ path })
        assert.strictEqual((yield* refused(client.contactGroups.get({ path }))).status, 404)
        assert.deepStrictEqual((yield* client.contacts.get({ path: { contactId: b.id } })).group_ids, [])
        // raw: an empty contact_ids is a body the typed client would not send
        const malformed = yield* request("POST", `/v1/contact-groups/${group.id}/members`, {
          token: key,
          body: { contact_ids: [] }
        })
        assert.strictEqual(malformed.status, 422)
      }))
  })
})
