import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, createKey, refused, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const UNKNOWN = "tpl_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"

const templateKey = Effect.gen(function*() {
  const user = yield* signUp()
  const key = yield* createKey(user, { scopes: ["templates.manage"] })
  return { user, key: key.secret, client: yield* api(key.secret) }
})

const eventsOf = (objectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ type: string; envelope: string }>`SELECT type, envelope FROM events
      WHERE object_id = ${objectId} ORDER BY created_at, id`)

describe("templates", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("creates a template with one required variable per placeholder, language en and template.created", () =>
      Effect.gen(function*() {
        const { client, user } = yield* templateKey
        const [created, response] = yield* client.templates.create({
          payload: {
            slug: "order_shipped",
            name: "Order shipped",
            category: "utility",
            body: "Hi {{name}}, {{order}} is on its way, {{name}}"
          },
          withResponse: true
        })
        assert.strictEqual(response.status, 201)
        assert.match(created.id, /^tpl_/)
        assert.strictEqual(created.object, "template")
        assert.strictEqual(created.workspace_id, user.workspaceId)
        assert.strictEqual(created.language, "en")
        assert.strictEqual(created.status, "active")
        assert.isNull(created.archived_at)
        assert.deepStrictEqual(created.variables, [
          { name: "name", required: true, example: null },
          { name: "order", required: true, example: null }
        ])
        assert.deepStrictEqual(yield* client.templates.get({ path: { templateId: created.id } }), created)
        const events = yield* eventsOf(created.id)
        assert.deepStrictEqual(events.map((e) => e.type), ["template.created"])
        // the catalogue says template events are emitted: they now are
        const hooks = yield* createKey(user, { scopes: ["webhooks.manage"] })
        const types = (yield* (yield* api(hooks.secret)).webhooks.eventTypes({ urlParams: { limit: 100 } })).data
        for (const type of ["template.created", "template.updated", "template.archived"]) {
          assert.isTrue(types.find((t) => t.type === type)!.emitted, type)
        }
        assert.deepStrictEqual(JSON.parse(events[0]!.envelope).data, {
          object: "template",
          object_id: created.id,
          template_id: created.id,
          status: "active"
        })
      }))

    it.effect("refuses a slug already used in the workspace with 409 CONFLICT, without echoing it", () =>
      Effect.gen(function*() {
        const { client } = yield* templateKey
        const payload = { slug: "welcome_offer_x7", name: "A", category: "marketing", body: "Hello" } as const
        yield* client.templates.create({ payload })
        const dup = yield* refused(client.templates.create({ payload: { ...payload, name: "B" } }))
        assert.strictEqual(dup.status, 409)
        assert.strictEqual(dup.code, "CONFLICT")
        assert.strictEqual(dup.details["reason"], "slug_taken")
        assert.notInclude(JSON.stringify(dup), "welcome_offer_x7")
        // another workspace may use it
        const other = yield* templateKey
        yield* other.client.templates.create({ payload })
      }))

    it.effect("refuses malformed braces, undeclared placeholders and unused declarations with positions", () =>
      Effect.gen(function*() {
        const { client } = yield* templateKey
        const malformed = yield* refused(client.templates.create({
          payload: { slug: "bad", name: "Bad", category: "utility", body: "Hi {{ name }} and {{Name}} x}} {{open" }
        }))
        assert.strictEqual(malformed.status, 422)
        assert.strictEqual(malformed.code, "VALIDATION_ERROR")
        assert.strictEqual(malformed.details["reason"], "invalid_template")
        assert.deepStrictEqual(malformed.details["issues"].map((i: any) => i.position), [3, 18, 28, 31])
        assert.deepStrictEqual(malformed.details["issues"][0].path, ["body"])
        const mismatch = yield* refused(client.templates.create({
          payload: {
            slug: "mismatch",
            name: "M",
            category: "utility",
            body: "😀 {{code}} {{name}}",
            variables: [{ name: "name" }, { name: "unused", example: "x" }]
          }
        }))
        assert.deepStrictEqual(mismatch.details["issues"], [
          { path: ["variables", 1, "name"], message: "Declared but never used in the body" },
          {
            path: ["body"],
            message: "A placeholder has no declaration in variables at character 2",
            position: 2
          }
        ])
        const long = yield* refused(client.templates.create({
          payload: { slug: "long", name: "L", category: "utility", body: "é".repeat(1025) }
        }))
        assert.strictEqual(long.details["issues"][0].message, "Expected at most 1024 characters")
        const exact = yield* client.templates.create({
          payload: { slug: "exact", name: "E", category: "utility", body: "😀".repeat(1024) }
        })
        assert.strictEqual(exact.status, "active")
        // raw: a slug off the contract's pattern, which the typed client would not send
        const badSlug = yield* request("POST", "/v1/templates", {
          token: (yield* templateKey).key,
          body: { slug: "Bad-Slug", name: "x", category: "utility", body: "x" }
        })
        assert.strictEqual(badSlug.status, 422)
        assert.deepStrictEqual(badSlug.body.error.details.issues[0].path, ["slug"])
      }))

    it.effect("lists newest first with status, category and q filters", () =>
      Effect.gen(function*() {
        const { client, key } = yield* templateKey
        const a = yield* client.templates.create({
          payload: { slug: "login_code", name: "Login code", category: "authentication", body: "{{code}}" }
        })
        const b = yield* client.templates.create({
          payload: { slug: "spring_sale", name: "Spring SALE 50%", category: "marketing", body: "Sale" }
        })
        const c = yield* client.templates.create({
          payload: { slug: "receipt", name: "Receipt", category: "utility", body: "Thanks" }
        })
        yield* client.templates.archive({ path: { templateId: c.id } })
        const all = yield* client.templates.list({ urlParams: {} })
        assert.deepStrictEqual(all.data.map((t) => t.id), [c.id, b.id, a.id])
        const active = yield* client.templates.list({ urlParams: { status: "active" } })
        assert.deepStrictEqual(active.data.map((t) => t.id), [b.id, a.id])
        const archived = yield* client.templates.list({ urlParams: { status: "archived" } })
        assert.deepStrictEqual(archived.data.map((t) => t.id), [c.id])
        const marketing = yield* client.templates.list({ urlParams: { category: "marketing" } })
        assert.deepStrictEqual(marketing.data.map((t) => t.id), [b.id])
        const bySale = yield* client.templates.list({ urlParams: { q: "sale" } })
        assert.deepStrictEqual(bySale.data.map((t) => t.id), [b.id])
        const bySlug = yield* client.templates.list({ urlParams: { q: "LOGIN_" } })
        assert.deepStrictEqual(bySlug.data.map((t) => t.id), [a.id])
        // % is literal, not a wildcard
        assert.deepStrictEqual((yield* client.templates.list({ urlParams: { q: "50%" } })).data.map((t) => t.id), [
          b.id
        ])
        assert.lengthOf((yield* client.templates.list({ urlParams: { q: "%" } })).data, 1)
        const paged = yield* client.templates.list({ urlParams: { limit: 2 } })
        assert.isTrue(paged.page.has_more)
        // the cursor is opaque: sent as it came
        const token = (yield* templateKey).key
        // raw: the cursor goes into the query exactly as it came, not decoded and encoded again by a client
        const rest = yield* request("GET", `/v1/templates?limit=2&after=${paged.page.next_cursor}`, { token: key })
        assert.deepStrictEqual(rest.body.data.map((t: any) => t.id), [a.id])
        // raw: a status the contract does not take, which the typed client would not send
        const bad = yield* request("GET", "/v1/templates?status=draft", { token })
        assert.strictEqual(bad.status, 422)
      }))

    it.effect("updates an active template with the creation rules and emits template.updated", () =>
      Effect.gen(function*() {
        const { client } = yield* templateKey
        const t = yield* client.templates.create({
          payload: { slug: "upd", name: "U", category: "utility", body: "Hi {{name}}" }
        })
        const renamed = yield* client.templates.update({
          path: { templateId: t.id },
          payload: { name: "Renamed", category: "marketing", language: "pt_BR" }
        })
        assert.strictEqual(renamed.name, "Renamed")
        assert.strictEqual(renamed.category, "marketing")
        assert.strictEqual(renamed.language, "pt_BR")
        assert.strictEqual(renamed.body, "Hi {{name}}")
        // a new body is checked against the current declarations
        const undeclared = yield* refused(client.templates.update({
          path: { templateId: t.id },
          payload: { body: "Hi {{name}}, {{code}}" }
        }))
        assert.strictEqual(undeclared.status, 422)
        assert.strictEqual(undeclared.details["issues"][0].position, 13)
        const rebodied = yield* client.templates.update({
          path: { templateId: t.id },
          payload: { body: "Code {{code}}", variables: [{ name: "code", required: true, example: "123456" }] }
        })
        assert.deepStrictEqual(rebodied.variables, [{ name: "code", required: true, example: "123456" }])
        // raw: an empty update, which the contract refuses and the typed client would not send
        const empty = yield* request("PATCH", `/v1/templates/${t.id}`, { token: (yield* templateKey).key, body: {} })
        assert.strictEqual(empty.status, 422)
        // raw: `slug` is no member of the update (it never changes), a body the typed client would not send
        const slug = yield* request("PATCH", `/v1/templates/${t.id}`, {
          token: (yield* templateKey).key,
          body: { slug: "other" }
        })
        assert.strictEqual(slug.status, 422)
        assert.deepStrictEqual((yield* eventsOf(t.id)).map((e) => e.type), [
          "template.created",
          "template.updated",
          "template.updated"
        ])
      }))

    it.effect("archives repeatably with one template.archived; an archived template cannot change", () =>
      Effect.gen(function*() {
        const { client } = yield* templateKey
        const t = yield* client.templates.create({
          payload: { slug: "arch", name: "A", category: "utility", body: "x" }
        })
        const first = yield* client.templates.archive({ path: { templateId: t.id } })
        assert.strictEqual(first.status, "archived")
        assert.isString(first.archived_at)
        const again = yield* client.templates.archive({ path: { templateId: t.id } })
        assert.deepStrictEqual(again, first)
        assert.deepStrictEqual((yield* eventsOf(t.id)).map((e) => e.type), ["template.created", "template.archived"])
        const changed = yield* refused(client.templates.update({ path: { templateId: t.id }, payload: { name: "B" } }))
        assert.strictEqual(changed.status, 409)
        assert.strictEqual(changed.details["reason"], "template_archived")
        // the slug stays taken
        const reuse = yield* refused(client.templates.create({
          payload: { slug: "arch", name: "A", category: "utility", body: "x" }
        }))
        assert.strictEqual(reuse.status, 409)
      }))

    it.effect("answers 404 for a template of another workspace or none", () =>
      Effect.gen(function*() {
        const { client } = yield* templateKey
        const mine = yield* client.templates.create({
          payload: { slug: "mine", name: "M", category: "utility", body: "x" }
        })
        const other = yield* templateKey
        for (const id of [mine.id, UNKNOWN] as const) {
          const got = yield* refused(other.client.templates.get({ path: { templateId: id } }))
          assert.strictEqual(got.status, 404)
          assert.strictEqual(got.code, "TEMPLATE_NOT_FOUND")
          assert.strictEqual(got.details["resource"], "template")
          assert.strictEqual((yield* refused(other.client.templates.archive({ path: { templateId: id } }))).status, 404)
          assert.strictEqual(
            (yield* refused(other.client.templates.update({ path: { templateId: id }, payload: { name: "x" } })))
              .status,
            404
          )
        }
      }))

    it.effect("documents the template schema, the placeholder grammar and every error in OpenAPI", () =>
      Effect.gen(function*() {
        // raw: the OpenAPI document is not an endpoint of the contract
        const spec = (yield* request("GET", "/openapi.json")).body
        const schema = JSON.stringify(spec.components.schemas.Template)
        assert.include(schema, "{{name}}")
        assert.include(schema, "^[a-z][a-z0-9_]{0,63}$")
        assert.isDefined(spec.components.schemas.TemplateVariable)
        const create = spec.paths["/v1/templates"].post
        assert.deepStrictEqual(create["x-required-scopes"], ["templates.manage"])
        assert.include(JSON.stringify(create.responses["409"]), "Conflict")
        assert.include(JSON.stringify(create.responses["422"]), "ValidationError")
        assert.include(create.description, "position")
        const testSend = spec.paths["/v1/templates/{templateId}/test-send"].post
        assert.strictEqual(testSend["x-rate-limit-rule"], "template_test_send")
        for (
          const code of ["TemplateNotFound", "TemplateNotSendable", "TemplateVariableMissing", "IdempotencyConflict"]
        ) {
          assert.include(JSON.stringify(testSend.responses), code)
        }
        const send = JSON.stringify(spec.paths["/v1/messages"].post.responses)
        for (const code of ["TemplateNotFound", "TemplateNotSendable", "TemplateVariableMissing"]) {
          assert.include(send, code)
        }
        assert.include(JSON.stringify(spec.components.schemas.TemplateVariableMissing), "missing")
      }))

    it.effect("needs templates.manage to read and write templates", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const sender = yield* createKey(user, { scopes: ["messages.send", "messages.read"] })
        const list = yield* refused((yield* api(sender.secret)).templates.list({ urlParams: {} }))
        assert.strictEqual(list.status, 403)
        assert.deepStrictEqual(list.details.required_scopes, ["templates.manage"])
      }))
  })
})
