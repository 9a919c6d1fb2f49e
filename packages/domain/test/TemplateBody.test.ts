import { assert, describe, it } from "@effect/vitest"
import { TemplateBody, Templates } from "@switchboard/domain"

const required = (name: string, example: string | null = null): TemplateBody.VariableDeclaration => ({
  name,
  required: true,
  example
})
const PATH = ["template", "variables"]

describe("template bodies", () => {
  it("finds each placeholder with its position, counting code points", () => {
    const { issues, parsed } = TemplateBody.parseBody("😀 Hi {{first_name}}, order {{order_id}} for {{first_name}}")
    assert.deepStrictEqual(issues, [])
    assert.deepStrictEqual(parsed.placeholders, [
      { name: "first_name", position: 5 },
      { name: "order_id", position: 27 },
      { name: "first_name", position: 44 }
    ])
    assert.deepStrictEqual(parsed.names, ["first_name", "order_id"])
  })

  it("reports malformed braces with their positions and keeps single braces as text", () => {
    const { issues } = TemplateBody.parseBody("a {b} {{ name }} {{Name}} x}} {{open {{ok}}")
    assert.deepStrictEqual(issues.map((i) => i.position), [6, 17, 27, 30])
    assert.include(issues[0]!.message, "at character 6")
    assert.include(issues[2]!.message, "Unmatched")
    assert.include(issues[3]!.message, "Unclosed")
    assert.deepStrictEqual(TemplateBody.parseBody("{single} braces").issues, [])
    assert.deepStrictEqual(TemplateBody.parseBody("end {{").issues.map((i) => i.position), [4])
  })

  it("defaults to one required variable per placeholder", () => {
    const { issues, variables } = TemplateBody.checkTemplate("{{a}} {{b}} {{a}}", undefined)
    assert.deepStrictEqual(issues, [])
    assert.deepStrictEqual(variables, [required("a"), required("b")])
  })

  it("refuses a declared variable the body never uses and a placeholder nobody declared", () => {
    const { issues } = TemplateBody.checkTemplate("Hi {{name}} {{code}}", [required("name"), required("unused")])
    assert.deepStrictEqual(issues.map((i) => i.path), [["variables", 1, "name"], ["body"]])
    assert.strictEqual(issues[1]!.position, 12)
  })

  it("refuses a body over 1 024 characters, counting an emoji as one", () => {
    assert.deepStrictEqual(TemplateBody.checkTemplate("😀".repeat(1024), undefined).issues, [])
    assert.strictEqual(
      TemplateBody.checkTemplate("😀".repeat(1025), undefined).issues[0]!.message,
      "Expected at most 1024 characters"
    )
  })

  it("renders in one pass: a value containing {{x}} stays as it is", () => {
    const result = TemplateBody.renderTemplate(
      { body: "Hi {{name}}, {{x}}!", variables: [required("name"), required("x")] },
      { name: "{{x}}", x: "Zoë 🎉" },
      PATH
    )
    assert.deepStrictEqual(result, { _tag: "Rendered", body: "Hi {{x}}, Zoë 🎉!" })
  })

  it("lists every missing required variable and renders optional ones as nothing", () => {
    const variables = [required("a"), required("b"), { name: "c", required: false, example: null }]
    assert.deepStrictEqual(TemplateBody.renderTemplate({ body: "{{a}}{{b}}{{c}}", variables }, {}, PATH), {
      _tag: "Missing",
      missing: ["a", "b"]
    })
    assert.deepStrictEqual(
      TemplateBody.renderTemplate({ body: "{{a}}-{{b}}-{{c}}", variables }, { a: "1", b: "2" }, PATH),
      {
        _tag: "Rendered",
        body: "1-2-"
      }
    )
  })

  it("refuses unknown variables, empty values and values over 1 024 characters", () => {
    const template = { body: "{{a}}", variables: [required("a")] }
    const unknown = TemplateBody.renderTemplate(template, { a: "x", zz: "y" }, PATH)
    // the unknown name is the request's text: reported at the variables, with the declared names
    assert.deepStrictEqual(unknown._tag === "Invalid" && unknown.issues, [
      { path: PATH, message: "Unknown variable: this template declares a" }
    ])
    const empty = TemplateBody.renderTemplate(template, { a: "" }, PATH)
    assert.strictEqual(empty._tag === "Invalid" && empty.issues[0]!.message, "Expected a non-empty value")
    assert.strictEqual(TemplateBody.renderTemplate(template, { a: "é".repeat(1024) }, PATH)._tag, "Rendered")
    const long = TemplateBody.renderTemplate(template, { a: "é".repeat(1025) }, PATH)
    assert.strictEqual(long._tag === "Invalid" && long.issues[0]!.message, "Expected at most 1024 characters")
  })

  it("refuses a rendered text over 1 024 characters, and accepts exactly 1 024", () => {
    const template = { body: "ab{{v}}", variables: [required("v")] }
    assert.deepStrictEqual(TemplateBody.renderTemplate(template, { v: "x".repeat(1022) }, PATH), {
      _tag: "Rendered",
      body: "ab" + "x".repeat(1022)
    })
    const over = TemplateBody.renderTemplate(template, { v: "x".repeat(1023) }, PATH)
    assert.strictEqual(over._tag, "Invalid")
  })
})

describe("provider value rules", () => {
  it("lets the sandbox and QR keep newlines and tabs; the cloud provider's rules refuse them", () => {
    assert.isUndefined(Templates.valueBreaksProviderRules(Templates.TEMPLATE_VALUE_RULES.sandbox, "a\n\tb     c"))
    assert.isUndefined(Templates.valueBreaksProviderRules(Templates.TEMPLATE_VALUE_RULES.qr, "line 1\nline 2"))
    assert.include(Templates.valueBreaksProviderRules(Templates.TEMPLATE_VALUE_RULES.cloud, "a\nb"), "newlines")
    assert.include(Templates.valueBreaksProviderRules(Templates.TEMPLATE_VALUE_RULES.cloud, "a\tb"), "tabs")
    assert.include(Templates.valueBreaksProviderRules(Templates.TEMPLATE_VALUE_RULES.cloud, "a     b"), "spaces")
    assert.isUndefined(Templates.valueBreaksProviderRules(Templates.TEMPLATE_VALUE_RULES.cloud, "a    b"))
  })
})
