/**
 * The one rule of a text that reaches a reader (`Characters.visibleText`): a send's `text.body`
 * (`Messaging.TextBody`, also a sandbox inbound text's), a call policy's `reply_text`, a
 * template's body and its rendered text. Plain values, no server.
 */
import { assert, describe, it } from "@effect/vitest"
import { Characters, Messaging, SandboxInbound, TemplateBody } from "@switchboard/domain"
import { Either, Schema } from "effect"

const BLANKS = [" ", " \n\t ", "\u00a0\u3000", "\u200b", "\u200d\ufeff", "\u3164", "\u2800", "\u00ad\u2060", "\u0007"]
const TEXTS = ["a", " hi ", "😀", "\u200bx", "ㅤ한", "٠", "\u3000.\u3000"]

describe("a text body needs a visible character", () => {
  it("tells visible characters from whitespace, invisible and control characters", () => {
    for (const blank of BLANKS) assert.isFalse(Characters.hasVisibleCharacter(blank), JSON.stringify(blank))
    for (const text of TEXTS) assert.isTrue(Characters.hasVisibleCharacter(text), JSON.stringify(text))
  })

  it("refuses a send's and a sandbox inbound text body of invisible characters alone, with one message", () => {
    const send = Schema.decodeUnknownEither(Messaging.SendMessageRequest)
    const inbound = Schema.decodeUnknownEither(SandboxInbound.SandboxInboundRequest)
    for (const body of BLANKS) {
      for (
        const decoded of [
          send({ to: "+4915112345678", text: { body } }),
          inbound({ from: "+4915112345678", text: { body } })
        ]
      ) {
        assert.isTrue(Either.isLeft(decoded), JSON.stringify(body))
        if (Either.isLeft(decoded)) assert.include(decoded.left.message, Characters.NOT_VISIBLE_MESSAGE)
      }
    }
    for (const body of TEXTS) {
      assert.isTrue(Either.isRight(send({ to: "+4915112345678", text: { body } })), JSON.stringify(body))
    }
  })

  it("refuses a template body, and a rendered text, with no visible character", () => {
    assert.deepStrictEqual(TemplateBody.checkTemplate(" \u200b ", undefined).issues, [{
      path: ["body"],
      message: Characters.NOT_VISIBLE_MESSAGE
    }])
    assert.deepStrictEqual(TemplateBody.checkTemplate(" {{name}} ", undefined).issues, [])
    const template = {
      body: "{{greeting}} {{name}}",
      variables: [{ name: "greeting", required: true, example: null }, {
        name: "name",
        required: false,
        example: null
      }]
    }
    const path = ["template", "variables"]
    assert.deepStrictEqual(TemplateBody.renderTemplate(template, { greeting: "\u3164" }, path), {
      _tag: "Invalid",
      issues: [{ path, message: "The rendered text has no visible character (only whitespace or invisible ones)" }]
    })
    assert.deepStrictEqual(TemplateBody.renderTemplate(template, { greeting: " ", name: "Ada" }, path), {
      _tag: "Rendered",
      body: "  Ada"
    })
  })
})
