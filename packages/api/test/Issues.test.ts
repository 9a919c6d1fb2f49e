/** Validation messages speak the user's language: no TypeScript or Effect syntax reaches a client. */
import { assert, describe, it } from "@effect/vitest"
import * as Issues from "../src/Issues.js"

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
})
