/**
 * An id that names nothing is 404 with the resource's not-found code (docs/API.md "Errors"), whether
 * it is well formed or not: `GET /v1/messages/msg_123` answers what a well-formed unknown message
 * id answers, and so does a body reference like `channel_id: "ch_unknown"`. A value that is not a
 * string where an id is expected stays 422.
 */
import { assert, describe, layer } from "@effect/vitest"
import { type Ids, Scopes, UnknownIds } from "@switchboard/domain"
import { Effect, FastCheck as fc } from "effect"
import { caseArbitrary, encodeComponent, operations } from "./support/ContractFuzz.js"
import { api, createKey, request, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const NOT_FOUND_CODES = ["NOT_FOUND", "CHANNEL_NOT_FOUND", "API_KEY_NOT_FOUND", "TEMPLATE_NOT_FOUND"]

/** Ids that cannot exist, for a kind: too short, no prefix, lower-case ULID, an emoji. */
const malformed = (prefix: string) => [`${prefix}_123`, "unknown", `${prefix}_01jd7x6f3q9t2m5n8r4v0w1y2z`, "\u{1F600}"]

describe("an id that names nothing is 404", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("answers a malformed path id like a well-formed unknown one, on every route with an id", () =>
      Effect.gen(function*() {
        const { user } = yield* sandboxSetup()
        const key = (yield* createKey(user, { mode: "test", scopes: [...Scopes.SCOPES] })).secret
        const session = { token: user.accessToken, workspace: user.workspaceId }
        const withIds = operations.filter((op) => op.pathParams !== undefined && !op.path.endsWith("/stream"))
        assert.isAtLeast(withIds.length, 25)
        let compared = 0
        for (const op of withIds) {
          // a valid request (body and query from the operation's own schemas), aimed at nothing
          const [c] = fc.sample(caseArbitrary(op).filter((c) => c.mutation === null), { numRuns: 1, seed: 7 })
          const creds = op.auth === "session" ? session : { token: key }
          const send = (params: Record<string, string>) => {
            let path = op.path
            for (const [k, v] of Object.entries(params)) path = path.replace(`:${k}`, encodeComponent(v))
            const query = Object.entries(c!.query ?? {}).map(([k, v]) => `${k}=${encodeComponent(String(v))}`)
            // raw: ids of every shape in every operation's path, query and body, from the contract's table
            return request(op.method, query.length > 0 ? `${path}?${query.join("&")}` : path, {
              ...creds,
              ...(c!.body === undefined ? {} : { body: c!.body })
            })
          }
          const wellFormed = c!.pathParams!
          const [firstName, firstId] = Object.entries(wellFormed)[0]!
          const prefix = firstId.slice(0, firstId.indexOf("_")) as Ids.IdPrefix
          const known = yield* send(wellFormed)
          for (const bad of malformed(prefix)) {
            const reply = yield* send({ ...wellFormed, [firstName]: bad })
            const label = `${op.name} with ${firstName} = ${JSON.stringify(bad)}`
            assert.strictEqual(reply.status, 404, `${label}: ${reply.text.slice(0, 300)}`)
            assert.include(NOT_FOUND_CODES, reply.body.error.code, label)
            assert.strictEqual(reply.body.error.details.resource, UnknownIds.RESOURCE_OF_PREFIX[prefix], label)
            assert.notInclude(reply.text, bad, `${label}: never echoed`)
            if (known.status === 404) {
              assert.strictEqual(
                reply.body.error.code,
                known.body.error.code,
                `${label}: the well-formed unknown id's code`
              )
              assert.strictEqual(reply.body.error.details.resource, known.body.error.details.resource, label)
            }
          }
          if (known.status === 404) compared++
        }
        assert.isAtLeast(compared, 20)
      }))

    it.effect("answers a body or filter reference that cannot exist with the resource's 404", () =>
      Effect.gen(function*() {
        const { key, user } = yield* sandboxSetup()
        const admin = (yield* createKey(user, { mode: "test", scopes: [...Scopes.SCOPES] })).secret
        const cases: ReadonlyArray<
          readonly [string, "GET" | "POST", string, unknown, string, string, ReadonlyArray<string | number>]
        > = [
          [
            "send channel_id",
            "POST",
            "/v1/messages",
            { to: "+4915112345678", channel_id: "ch_unknown", text: { body: "x" } },
            "CHANNEL_NOT_FOUND",
            "channel",
            ["channel_id"]
          ],
          ["messages filter", "GET", "/v1/messages?channel_id=ch_unknown", undefined, "CHANNEL_NOT_FOUND", "channel", [
            "channel_id"
          ]],
          ["conversations filter", "GET", "/v1/conversations?channel_id=x", undefined, "CHANNEL_NOT_FOUND", "channel", [
            "channel_id"
          ]],
          ["contacts filter", "GET", "/v1/contacts?group_id=grp_1", undefined, "NOT_FOUND", "contact_group", [
            "group_id"
          ]],
          [
            "contact group_ids",
            "POST",
            "/v1/contacts",
            { phone_number: "+4915100000001", group_ids: ["grp_nope"] },
            "NOT_FOUND",
            "contact_group",
            ["group_ids", 0]
          ],
          [
            "import group_id",
            "POST",
            "/v1/contacts/imports",
            { file: Buffer.from("phone_number\n+4915100000002\n").toString("base64"), group_id: "grp_nope" },
            "NOT_FOUND",
            "contact_group",
            ["group_id"]
          ]
        ]
        for (const [what, method, path, body, code, resource, member] of cases) {
          // raw: malformed ids (`ch_unknown`, ...) the typed client would refuse before sending
          const reply = yield* request(method, path, { token: what === "send channel_id" ? key : admin, body })
          assert.strictEqual(reply.status, 404, `${what}: ${reply.text.slice(0, 300)}`)
          assert.strictEqual(reply.body.error.code, code, what)
          assert.strictEqual(reply.body.error.details.resource, resource, what)
          assert.deepStrictEqual(reply.body.error.details.issues[0].path, member, what)
        }
        // members of a group: the position of the id naming nothing, as for a well-formed unknown one
        const group = yield* (yield* api(admin)).contactGroups.create({ payload: { name: "G" } })
        // raw: `cnt_1` is a malformed id the typed client would refuse before sending
        const members = yield* request("POST", `/v1/contact-groups/${group.id}/members`, {
          token: admin,
          body: { contact_ids: ["cnt_1"] }
        })
        assert.strictEqual(members.status, 404)
        assert.strictEqual(members.body.error.details.resource, "contact")
        assert.deepStrictEqual(members.body.error.details.issues[0].path, ["contact_ids", 0])
        // a value that is not a string is not an id: 422
        // raw: a number where an id goes, and a body wrong in two ways, are bodies the typed client would not send
        const numeric = yield* request("POST", "/v1/messages", {
          token: key,
          body: { to: "+4915112345678", channel_id: 123, text: { body: "x" } }
        })
        assert.strictEqual(numeric.status, 422)
        assert.strictEqual(numeric.body.error.code, "VALIDATION_ERROR")
        // anything else wrong too: the 422 lists it
        // raw: a body wrong in two ways (not E.164, malformed channel id)
        const both = yield* request("POST", "/v1/messages", {
          token: key,
          body: { to: "not a number", channel_id: "ch_unknown", text: { body: "x" } }
        })
        assert.strictEqual(both.status, 422)
      }))
  })
})
