import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, createKey, refused, sandboxSetup, waitForMessage } from "./support/Fixtures.js"
import { eventually, receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"
const UNKNOWN = "tpl_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"

/** A sandbox workspace (test key with the default scopes) and its typed client. */
const setup = Effect.gen(function*() {
  const { key, session, user } = yield* sandboxSetup([TO])
  return { key, session, user, client: yield* api(key) }
})

type Client = Effect.Effect.Success<typeof setup>["client"]

const orderTemplate = (client: Client, slug = "order_shipped") =>
  client.templates.create({
    payload: {
      slug,
      name: "Order shipped",
      category: "authentication",
      body: "Hi {{name}}, order {{order}} shipped{{note}}",
      variables: [
        { name: "name", required: true, example: "Ada" },
        { name: "order", required: true, example: "A-1" },
        { name: "note", required: false }
      ]
    }
  })

const send = (client: Client, template: { slug: string; variables?: Record<string, string> }, extra: object = {}) =>
  client.messages.send({ payload: { to: TO, template, ...extra }, headers: {} })

describe("template sends", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("sends a rendered template that reaches read, with the body on the message and in its webhook event", () =>
      Effect.gen(function*() {
        const sink = yield* receiver()
        const { client, key, session, user } = yield* setup
        const admin = yield* createKey(user, { scopes: ["webhooks.manage"] })
        yield* (yield* api(admin.secret)).webhooks.create({
          payload: { url: `${sink.url}/hooks`, event_types: ["message.queued", "message.read"] }
        })
        const template = yield* orderTemplate(client)
        const [sent, response] = yield* client.messages.send({
          payload: { to: TO, template: { slug: "order_shipped", variables: { name: "Zoë 🎉", order: "{{order}}" } } },
          headers: {},
          withResponse: true
        })
        assert.strictEqual(response.status, 201)
        assert.strictEqual(sent.type, "template")
        assert.strictEqual(sent.text.body, "Hi Zoë 🎉, order {{order}} shipped")
        assert.deepStrictEqual(sent.template, {
          id: template.id,
          slug: "order_shipped",
          variables: { name: "Zoë 🎉", order: "{{order}}" }
        })
        assert.strictEqual(sent.category, "authentication")
        assert.strictEqual(sent.channel_id, session.channel_id)
        const read = yield* waitForMessage(key, sent.id, (m) => m.status === "read")
        assert.strictEqual(read.text.body, "Hi Zoë 🎉, order {{order}} shipped")
        assert.strictEqual(read.type, "template")
        const received = yield* eventually(() => sink.received.length >= 2 ? sink.received : undefined)
        const byType = new Map(received.map((r) => [r.headers["x-webhook-event"], JSON.parse(r.body)]))
        assert.deepStrictEqual(byType.get("message.queued").data, {
          object: "message",
          object_id: sent.id,
          message_id: sent.id,
          from_state: null,
          to_state: "queued",
          category: "authentication",
          template: { id: template.id, slug: "order_shipped" },
          body: "Hi Zoë 🎉, order {{order}} shipped"
        })
        assert.strictEqual(byType.get("message.read").data.message_id, sent.id)
      }))

    it.effect("takes the request's category over the template's", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        yield* orderTemplate(client)
        const sent = yield* send(client, { slug: "order_shipped", variables: { name: "A", order: "1" } }, {
          category: "marketing"
        })
        assert.strictEqual(sent.category, "marketing")
      }))

    it.effect("answers 404 TEMPLATE_NOT_FOUND for an unknown slug without repeating it", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const missing = yield* refused(send(client, { slug: "nope", variables: {} }))
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(missing.code, "TEMPLATE_NOT_FOUND")
        assert.deepStrictEqual(missing.details, { resource: "template" })
        assert.notInclude(missing.message, "nope")
      }))

    it.effect("refuses an archived template with 409 TEMPLATE_NOT_SENDABLE", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const t = yield* orderTemplate(client)
        yield* client.templates.archive({ path: { templateId: t.id } })
        const archived = yield* refused(send(client, { slug: "order_shipped", variables: { name: "A", order: "1" } }))
        assert.strictEqual(archived.status, 409)
        assert.strictEqual(archived.code, "TEMPLATE_NOT_SENDABLE")
        assert.strictEqual(archived.details["reason"], "template_archived")
      }))

    it.effect("lists every missing required variable in 422 TEMPLATE_VARIABLE_MISSING, never filling in examples", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        yield* orderTemplate(client)
        const none = yield* refused(send(client, { slug: "order_shipped" }))
        assert.strictEqual(none.status, 422)
        assert.strictEqual(none.code, "TEMPLATE_VARIABLE_MISSING")
        assert.deepStrictEqual(none.details["missing"], ["name", "order"])
        const one = yield* refused(send(client, { slug: "order_shipped", variables: { order: "1", note: "!" } }))
        assert.deepStrictEqual(one.details["missing"], ["name"])
      }))

    it.effect("refuses unknown variables, empty values and values over 1 024 characters with 422 VALIDATION_ERROR", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        yield* orderTemplate(client)
        const unknown = yield* refused(send(client, {
          slug: "order_shipped",
          variables: { name: "A", order: "1", coupon: "X", extra: "Y" }
        }))
        assert.strictEqual(unknown.status, 422)
        assert.strictEqual(unknown.code, "VALIDATION_ERROR")
        // unknown names are the request's own text: counted and reported at the variables, never named
        assert.strictEqual(unknown.message, "2 variables are not declared by this template")
        assert.deepStrictEqual(unknown.details["issues"], [
          { path: ["template", "variables"], message: "Unknown variable: this template declares name, order, note" },
          { path: ["template", "variables"], message: "Unknown variable: this template declares name, order, note" }
        ])
        assert.notInclude(JSON.stringify(unknown), "coupon")
        const empty = yield* refused(send(client, { slug: "order_shipped", variables: { name: "", order: "1" } }))
        assert.strictEqual(empty.code, "VALIDATION_ERROR")
        assert.deepStrictEqual(empty.details["issues"], [
          { path: ["template", "variables", "name"], message: "Expected a non-empty value" }
        ])
        const long = yield* refused(
          send(client, { slug: "order_shipped", variables: { name: "é".repeat(1025), order: "1" } })
        )
        assert.deepStrictEqual(long.details["issues"][0].message, "Expected at most 1024 characters")
        assert.notInclude(JSON.stringify(long), "éé")
      }))

    it.effect("renders exactly 1 024 characters and refuses 1 025", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        yield* client.templates.create({
          payload: { slug: "code", name: "Code", category: "authentication", body: "😀{{code}}" }
        })
        const exact = yield* send(client, { slug: "code", variables: { code: "x".repeat(1023) } })
        assert.strictEqual(exact.text.body, "😀" + "x".repeat(1023))
        const over = yield* refused(send(client, { slug: "code", variables: { code: "x".repeat(1024) } }))
        assert.strictEqual(over.status, 422)
        assert.include(over.details["issues"][0].message, "rendered text is over 1024")
      }))

    it.effect("keeps a queued message's text when the template's body changes", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const t = yield* orderTemplate(client)
        const sent = yield* send(client, { slug: "order_shipped", variables: { name: "A", order: "1" } })
        yield* client.templates.update({
          path: { templateId: t.id },
          payload: { body: "Bye {{name}} {{order}}{{note}}" }
        })
        const after = yield* client.messages.get({ path: { messageId: sent.id } })
        assert.strictEqual(after.text.body, "Hi A, order 1 shipped")
        const next = yield* send(client, { slug: "order_shipped", variables: { name: "A", order: "1" } })
        assert.strictEqual(next.text.body, "Bye A 1")
      }))

    it.effect("replays a template send for the same Idempotency-Key and refuses other variables", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        yield* orderTemplate(client)
        const payload = { to: TO, template: { slug: "order_shipped", variables: { name: "A", order: "1" } } }
        const first = yield* client.messages.send({ payload, headers: { "idempotency-key": "tpl-1" } })
        const [again, response] = yield* client.messages.send({
          payload,
          headers: { "idempotency-key": "tpl-1" },
          withResponse: true
        })
        assert.strictEqual(again.id, first.id)
        assert.strictEqual(response.headers["idempotent-replay"], "true")
        const other = yield* refused(client.messages.send({
          payload: { ...payload, template: { slug: "order_shipped", variables: { name: "B", order: "1" } } },
          headers: { "idempotency-key": "tpl-1" }
        }))
        assert.strictEqual(other.code, "IDEMPOTENCY_CONFLICT")
      }))
  })
})

describe("template test-sends", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("sends for real with each variable's example unless given, through the same checks", () =>
      Effect.gen(function*() {
        const { client, key } = yield* setup
        const t = yield* orderTemplate(client)
        const [sent, response] = yield* client.templates.testSend({
          path: { templateId: t.id },
          payload: { to: TO, variables: { order: "B-2" } },
          headers: {},
          withResponse: true
        })
        assert.strictEqual(response.status, 201)
        assert.strictEqual(sent.text.body, "Hi Ada, order B-2 shipped")
        assert.strictEqual(sent.type, "template")
        assert.strictEqual(sent.status, "queued")
        assert.deepStrictEqual(sent.template?.variables, { name: "Ada", order: "B-2" })
        yield* waitForMessage(key, sent.id, (m) => m.status === "read")
        const unknown = yield* refused(client.templates.testSend({
          path: { templateId: t.id },
          payload: { to: TO, variables: { bogus: "1" } },
          headers: {}
        }))
        assert.strictEqual(unknown.code, "VALIDATION_ERROR")
        assert.deepStrictEqual(unknown.details["issues"][0].path, ["variables"])
      }))

    it.effect("refuses a required variable with neither value nor example, an unknown id and an archived template", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const t = yield* client.templates.create({
          payload: {
            slug: "otp",
            name: "OTP",
            category: "authentication",
            body: "{{code}} {{app}}",
            variables: [{ name: "code" }, { name: "app", example: "Shop" }]
          }
        })
        const missing = yield* refused(
          client.templates.testSend({ path: { templateId: t.id }, payload: { to: TO }, headers: {} })
        )
        assert.strictEqual(missing.status, 422)
        assert.strictEqual(missing.code, "TEMPLATE_VARIABLE_MISSING")
        assert.deepStrictEqual(missing.details["missing"], ["code"])
        const unknown = yield* refused(
          client.templates.testSend({ path: { templateId: UNKNOWN }, payload: { to: TO }, headers: {} })
        )
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.code, "TEMPLATE_NOT_FOUND")
        assert.strictEqual(unknown.details["id"], UNKNOWN)
        yield* client.templates.archive({ path: { templateId: t.id } })
        const archived = yield* refused(client.templates.testSend({
          path: { templateId: t.id },
          payload: { to: TO, variables: { code: "1" } },
          headers: {}
        }))
        assert.strictEqual(archived.status, 409)
        assert.strictEqual(archived.code, "TEMPLATE_NOT_SENDABLE")
      }))

    it.effect("honours Idempotency-Key, bound to the template and the body", () =>
      Effect.gen(function*() {
        const { client } = yield* setup
        const t = yield* orderTemplate(client)
        const u = yield* orderTemplate(client, "order_shipped_2")
        const call = (templateId: typeof t.id, order: string) =>
          client.templates.testSend({
            path: { templateId },
            payload: { to: TO, variables: { order } },
            headers: { "idempotency-key": "test-send-1" },
            withResponse: true
          })
        const [first] = yield* call(t.id, "1")
        const [again, response] = yield* call(t.id, "1")
        assert.strictEqual(again.id, first.id)
        assert.strictEqual(response.headers["idempotent-replay"], "true")
        assert.strictEqual((yield* refused(call(t.id, "2"))).code, "IDEMPOTENCY_CONFLICT")
        assert.strictEqual((yield* refused(call(u.id, "1"))).code, "IDEMPOTENCY_CONFLICT")
      }))

    it.effect("needs messages.send as well as templates.manage", () =>
      Effect.gen(function*() {
        const { client, user } = yield* setup
        const t = yield* orderTemplate(client)
        const manager = yield* createKey(user, { scopes: ["templates.manage"] })
        const reply = yield* refused((yield* api(manager.secret)).templates.testSend({
          path: { templateId: t.id },
          payload: { to: TO },
          headers: {}
        }))
        assert.strictEqual(reply.status, 403)
        assert.deepStrictEqual(reply.details["required_scopes"], ["templates.manage", "messages.send"])
      }))
  })
})
