/**
 * Template bodies, pure: the placeholder grammar, the check of declared against used variables,
 * and the one-pass renderer (docs/API.md "Templates"; the OpenAPI description of `Template`).
 *
 * Grammar: a placeholder is `{{name}}` with `name` matching `^[a-z][a-z0-9_]{0,63}$`, no spaces
 * inside the braces. Any `{{` opens a placeholder that must be well formed; a `}}` that closes no
 * placeholder is malformed too; single braces are text. Positions and lengths count characters
 * as Unicode code points (an emoji is one character), positions from 0.
 *
 * Rendering walks the parsed body once and inserts each value as it is: a `{{` inside a value is
 * never read as a placeholder. Nothing is substituted silently: a required variable without a
 * value, an unknown variable, an empty value or one over 1 024 characters, and a rendered text
 * with no visible character (`Characters.visibleText`, the rule of every text body) refuse the send.
 */
import { characterCount, hasVisibleCharacter, NOT_VISIBLE_MESSAGE } from "./Characters.js"

/** Longest body, and longest rendered text (characters). */
export const TEMPLATE_BODY_MAX = 1024
/** Longest variable value (characters). */
export const TEMPLATE_VALUE_MAX = 1024
export const VARIABLE_NAME = /^[a-z][a-z0-9_]{0,63}$/

export interface Placeholder {
  readonly name: string
  /** position of its `{{` (code points) */
  readonly position: number
}

/** One problem in a body or a set of variables; `position` is set for problems in the body. */
export interface TemplateIssue {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
  readonly position?: number
}

export type Segment = { readonly text: string } | { readonly variable: string }

export interface ParsedBody {
  readonly segments: ReadonlyArray<Segment>
  readonly placeholders: ReadonlyArray<Placeholder>
  /** distinct names, in order of first use */
  readonly names: ReadonlyArray<string>
}

/** Parses `body`; every malformed placeholder is an issue with its position. */
export const parseBody = (body: string): { readonly parsed: ParsedBody; readonly issues: Array<TemplateIssue> } => {
  const chars = Array.from(body)
  const segments: Array<Segment> = []
  const placeholders: Array<Placeholder> = []
  const issues: Array<TemplateIssue> = []
  const issue = (position: number, message: string) =>
    issues.push({ path: ["body"], message: `${message} at character ${position}`, position })
  let text = ""
  let i = 0
  while (i < chars.length) {
    if (chars[i] === "{" && chars[i + 1] === "{") {
      const start = i
      let j = i + 2
      while (
        j < chars.length && !(chars[j] === "}" && chars[j + 1] === "}") && !(chars[j] === "{" && chars[j + 1] === "{")
      ) j++
      if (j >= chars.length || chars[j] === "{") {
        issue(start, "Unclosed placeholder: `{{` without `}}`")
        text += chars.slice(start, j).join("")
        i = j
        continue
      }
      const name = chars.slice(i + 2, j).join("")
      if (!VARIABLE_NAME.test(name)) {
        issue(start, "Malformed placeholder: expected {{name}} with name matching ^[a-z][a-z0-9_]{0,63}$")
        text += chars.slice(start, j + 2).join("")
      } else {
        if (text !== "") segments.push({ text })
        text = ""
        segments.push({ variable: name })
        placeholders.push({ name, position: start })
      }
      i = j + 2
      continue
    }
    if (chars[i] === "}" && chars[i + 1] === "}") {
      issue(i, "Unmatched `}}`")
      text += "}}"
      i += 2
      continue
    }
    text += chars[i]
    i++
  }
  if (text !== "") segments.push({ text })
  const names = [...new Set(placeholders.map((p) => p.name))]
  return { parsed: { segments, placeholders, names }, issues }
}

export interface VariableDeclaration {
  readonly name: string
  readonly required: boolean
  readonly example: string | null
}

/** The problems of one value (empty, too long); `path` names the variable. */
export const valueIssues = (path: ReadonlyArray<string | number>, value: string): Array<TemplateIssue> =>
  value === ""
    ? [{ path, message: "Expected a non-empty value" }]
    : characterCount(value) > TEMPLATE_VALUE_MAX
    ? [{ path, message: `Expected at most ${TEMPLATE_VALUE_MAX} characters` }]
    : []

/**
 * A body and its declarations, checked together (creation and update). Without `declared`, every
 * placeholder gets a required variable with no example. Issues: malformed braces (with their
 * position), an empty body or one with no visible character, a body over 1 024 characters, a
 * declared variable the body never uses, a placeholder with no declaration (with its position),
 * a name declared twice, a bad example.
 */
export const checkTemplate = (
  body: string,
  declared: ReadonlyArray<VariableDeclaration> | undefined
): { readonly variables: ReadonlyArray<VariableDeclaration>; readonly issues: Array<TemplateIssue> } => {
  const { issues, parsed } = parseBody(body)
  if (body === "") issues.push({ path: ["body"], message: "Expected a non-empty body" })
  // a body of spaces alone would go out as an empty-looking message (the rule of every text body)
  else if (!hasVisibleCharacter(body)) issues.push({ path: ["body"], message: NOT_VISIBLE_MESSAGE })
  if (characterCount(body) > TEMPLATE_BODY_MAX) {
    issues.push({ path: ["body"], message: `Expected at most ${TEMPLATE_BODY_MAX} characters` })
  }
  if (declared === undefined) {
    return { variables: parsed.names.map((name) => ({ name, required: true, example: null })), issues }
  }
  const seen = new Set<string>()
  declared.forEach((v, index) => {
    if (!VARIABLE_NAME.test(v.name)) {
      issues.push({ path: ["variables", index, "name"], message: "Expected a name matching ^[a-z][a-z0-9_]{0,63}$" })
    } else if (seen.has(v.name)) {
      issues.push({ path: ["variables", index, "name"], message: "Declared twice" })
    } else if (!parsed.names.includes(v.name)) {
      issues.push({ path: ["variables", index, "name"], message: "Declared but never used in the body" })
    }
    seen.add(v.name)
    if (v.example !== null) issues.push(...valueIssues(["variables", index, "example"], v.example))
  })
  for (const p of parsed.placeholders) {
    if (!seen.has(p.name)) {
      issues.push({
        path: ["body"],
        // the placeholder's name is the request's own text: said by position
        message: `A placeholder has no declaration in variables at character ${p.position}`,
        position: p.position
      })
    }
  }
  return { variables: declared, issues }
}

/** An unknown variable, said with the names the template declares (stored, not from the request). */
const unknownVariable = (declared: ReadonlyArray<VariableDeclaration>) =>
  declared.length === 0
    ? "Unknown variable: this template declares none"
    : `Unknown variable: this template declares ${declared.map((v) => v.name).join(", ")}`

/** Why values cannot render: missing required names, or other issues (unknown, empty, too long). */
export type RenderResult =
  | { readonly _tag: "Rendered"; readonly body: string }
  | { readonly _tag: "Missing"; readonly missing: ReadonlyArray<string> }
  | { readonly _tag: "Invalid"; readonly issues: ReadonlyArray<TemplateIssue> }

/**
 * Renders a stored body with `values` in one pass. `path` prefixes the members of the request
 * the values came from (e.g. `["template", "variables"]`). Optional variables without a value
 * render as nothing; that is what declaring them optional means.
 */
export const renderTemplate = (
  template: { readonly body: string; readonly variables: ReadonlyArray<VariableDeclaration> },
  values: Readonly<Record<string, string>>,
  path: ReadonlyArray<string | number>
): RenderResult => {
  const declared = new Map(template.variables.map((v) => [v.name, v]))
  const missing = template.variables.filter((v) => v.required && !Object.hasOwn(values, v.name)).map((v) => v.name)
  if (missing.length > 0) return { _tag: "Missing", missing }
  const issues: Array<TemplateIssue> = []
  for (const [name, value] of Object.entries(values)) {
    // an unknown name is the request's own text: reported at the variables, never repeated
    if (!declared.has(name)) issues.push({ path: [...path], message: unknownVariable(template.variables) })
    else issues.push(...valueIssues([...path, name], value))
  }
  if (issues.length > 0) return { _tag: "Invalid", issues }
  let body = ""
  for (const segment of parseBody(template.body).parsed.segments) {
    body += "text" in segment ? segment.text : (values[segment.variable] ?? "")
  }
  if (characterCount(body) > TEMPLATE_BODY_MAX) {
    return {
      _tag: "Invalid",
      issues: [{ path, message: `The rendered text is over ${TEMPLATE_BODY_MAX} characters` }]
    }
  }
  // values of spaces, or optional variables left out, can leave nothing a reader sees
  if (!hasVisibleCharacter(body)) {
    return {
      _tag: "Invalid",
      issues: [{ path, message: "The rendered text has no visible character (only whitespace or invisible ones)" }]
    }
  }
  return { _tag: "Rendered", body }
}
