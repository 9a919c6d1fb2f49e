/** Validation messages speak the user's language: no TypeScript or Effect syntax reaches a client. */
import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as Issues from "../src/Issues.js"
import { StartPairingRequest } from "../src/QrPairingApi.js"

const messageOf = (message: string) => Issues.fromFormatted([{ _tag: "Type", path: ["to"], message }])[0]!.message

describe("validation messages", () => {
  it("turns schema descriptions in code syntax into sentences", () => {
    assert.strictEqual(
      messageOf("Expected `msg_${string}`, actual 42"),
      "Expected a message id (msg_ followed by 26 characters)"
    )
    assert.strictEqual(
      messageOf("Expected `whd_${string}`"),
      "Expected a webhook delivery id (whd_ followed by 26 characters)"
    )
    assert.strictEqual(
      messageOf(
        "Expected { readonly slug: a string; readonly variables?: { readonly [x: string]: string } | undefined }"
      ),
      "Expected an object"
    )
    assert.strictEqual(
      messageOf("Expected \"utility\" | \"marketing\" | \"authentication\""),
      "Expected one of \"utility\", \"marketing\", \"authentication\""
    )
    assert.strictEqual(messageOf("Expected string | null"), "Expected a string or null")
    assert.strictEqual(messageOf("Expected ReadonlyArray<string>"), "Expected a list")
    assert.strictEqual(messageOf("Expected <declaration> | `a${string}`"), "Has the wrong type or format")
  })

  it("leaves sentences alone", () => {
    assert.strictEqual(
      messageOf("Expected a string at most 500 character(s) long"),
      "Expected a string at most 500 character(s) long"
    )
  })

  it("never names a member the client chose: reported at its object", () => {
    const issues = Issues.fromFormatted([
      { _tag: "Unexpected", path: ["text", "Fz9echoQ"], message: "is unexpected, expected: \"body\"" },
      {
        _tag: "Unexpected",
        path: ["metadata", "Fz9echoQ".repeat(9)],
        message: "is unexpected, expected: maxLength(40)"
      },
      { _tag: "Type", path: ["metadata", "Fz9echoQ"], message: "Expected string, actual 1" },
      { _tag: "Type", path: ["text", "body"], message: "Expected string, actual 1" }
    ])
    assert.deepStrictEqual(issues, [
      { path: ["text"], message: "Unknown member; this object takes body" },
      { path: ["metadata"], message: "A member name is longer than 40 characters" },
      { path: ["metadata"], message: "A member: Expected string" },
      { path: ["text", "body"], message: "Expected string" }
    ])
  })

  it("a body that may be empty (null) and came with a wrong member: the member's issue alone, no \"Expected null\"", () => {
    const issuesOf = (schema: Schema.Schema<any, any>, body: unknown) => {
      const result = Schema.decodeUnknownEither(schema)(body, { onExcessProperty: "error", errors: "all" })
      assert.isTrue(Either.isLeft(result))
      return Issues.fromParseError(Either.getLeft(result).pipe((e) => e._tag === "Some" ? e.value : assert.fail()))
    }
    // qr/start's body (QrPairingApi): an empty body is null, so its schema is NullOr(the request)
    const startBody = Schema.NullOr(StartPairingRequest)
    assert.deepStrictEqual(issuesOf(startBody, { method: "code", phone_number: "4915112345678" }), [
      { path: ["phone_number"], message: "Expected an E.164 phone number such as +4915112345678" }
    ])
    assert.deepStrictEqual(issuesOf(startBody, { method: "sms" }), [
      { path: ["method"], message: "Expected one of \"qr\", \"code\"" }
    ])
    // a body that is no object at all: said in the contract's words, never the schema's name
    // (it said "Expected StartPairingRequest"), in ONE issue (it was two: "Expected an object" and
    // "Expected null", as if both were asked)
    for (const body of [5, "code", [1], true]) {
      assert.deepStrictEqual(issuesOf(startBody, body), [
        { path: [], message: "Expected an object, or no body" }
      ], JSON.stringify(body))
    }
    // a member that may be null keeps saying so, in the same issue
    assert.deepStrictEqual(issuesOf(Schema.Struct({ name: Schema.NullOr(Schema.String) }), { name: 5 }), [
      { path: ["name"], message: "Expected string, or null" }
    ])
    assert.deepStrictEqual(
      issuesOf(Schema.Struct({ mode: Schema.NullOr(Schema.Literal("a", "b")) }), { mode: "c" }),
      [{ path: ["mode"], message: "Expected one of \"a\", \"b\", or null" }]
    )
  })
})
