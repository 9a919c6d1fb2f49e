/**
 * Templates on the wire (docs/API.md "Templates"): the resource, its requests, and the value rules
 * providers impose on rendered text. The grammar and the renderer are in `TemplateBody.ts`.
 */
import { Schema } from "effect"
import { maxCharacters, minCharacters } from "./Characters.js"
import { Id, IdRef } from "./Ids.js"
import { Category } from "./MessageCategory.js"
import type { Provider } from "./Messaging.js"
import { E164, StrictStruct, Timestamp } from "./Schemas.js"
import { TEMPLATE_BODY_MAX } from "./TemplateBody.js"

export const TemplateStatus = Schema.Literal("active", "archived").annotations({ identifier: "TemplateStatus" })
export type TemplateStatus = typeof TemplateStatus.Type

export const TemplateSlug = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9_]{1,64}$/, { message: () => "Expected a slug matching ^[a-z0-9_]{1,64}$" }),
  Schema.annotations({ description: "Unique per workspace: `^[a-z0-9_]{1,64}$`", examples: ["order_shipped"] })
)

export const TemplateVariable = Schema.Struct({
  name: Schema.String.annotations({ description: "`^[a-z][a-z0-9_]{0,63}$`, used as `{{name}}` in the body" }),
  required: Schema.Boolean.annotations({ description: "A send without it is 422 TEMPLATE_VARIABLE_MISSING" }),
  example: Schema.NullOr(Schema.String).annotations({
    description: "Sample value (1..1 024 characters); used by test-send only, never by real sends"
  })
}).annotations({ identifier: "TemplateVariable" })

const TemplateBodyText = Schema.String.annotations({
  description:
    `Up to ${TEMPLATE_BODY_MAX} characters (Unicode code points), at least one of them visible (not only whitespace or invisible characters). Placeholders are \`{{name}}\` with \`name\` matching \`^[a-z][a-z0-9_]{0,63}$\`, no spaces inside the braces; any other \`{{\` or a stray \`}}\` is malformed (422 with the character position in \`details.issues[].position\`). Single braces are text.`
})

export const TemplateLanguage = Schema.String.pipe(
  Schema.pattern(/^[a-z]{2,3}([_-][A-Za-z0-9]{2,8})?$/, {
    message: () => "Expected a language code such as en, pt_BR or en-US"
  })
)

export class Template extends Schema.Class<Template>("Template")({
  id: Id("tpl"),
  object: Schema.Literal("template"),
  workspace_id: Id("ws"),
  slug: Schema.String,
  name: Schema.String,
  category: Category.annotations({
    description: "The category (and so the priority) of its sends, unless a send names one"
  }),
  language: Schema.String,
  body: TemplateBodyText,
  variables: Schema.Array(TemplateVariable),
  status: TemplateStatus,
  created_at: Timestamp,
  updated_at: Timestamp,
  archived_at: Schema.NullOr(Timestamp)
}, {
  description:
    "A message body with `{{name}}` placeholders. Sends render it once: a `{{` inside a value is never expanded. A send refuses missing required variables (422 TEMPLATE_VARIABLE_MISSING with `details.missing`), unknown ones (422 VALIDATION_ERROR, path naming each), empty values and values over 1 024 characters, and a rendered text over 1 024 characters or with no visible character (whitespace or invisible characters alone)."
}) {}

const VariableInput = StrictStruct({
  name: Schema.String.pipe(maxCharacters(64)),
  required: Schema.optional(Schema.Boolean).annotations({ description: "Default true" }),
  example: Schema.optional(Schema.NullOr(Schema.String.pipe(maxCharacters(4096))))
})

const Name = Schema.String.pipe(minCharacters(1), maxCharacters(128))
// the exact limits (code points, placeholders) are checked by the use-case with positions
const BodyInput = Schema.String.pipe(maxCharacters(4 * TEMPLATE_BODY_MAX))
const Variables = Schema.Array(VariableInput).pipe(Schema.maxItems(100))

export const CreateTemplateRequest = StrictStruct({
  slug: TemplateSlug,
  name: Name,
  category: Category,
  language: Schema.optional(TemplateLanguage).annotations({ description: "Default `en`" }),
  body: BodyInput,
  variables: Schema.optional(Variables).annotations({
    description: "Default: one required variable per placeholder, without example"
  })
}).annotations({ identifier: "CreateTemplateRequest" })

export const UpdateTemplateRequest = StrictStruct({
  name: Schema.optional(Name),
  category: Schema.optional(Category),
  language: Schema.optional(TemplateLanguage),
  body: Schema.optional(BodyInput),
  variables: Schema.optional(Variables)
}).pipe(
  Schema.filter((b) => Object.keys(b).length > 0 || "Send at least one of name, category, language, body, variables")
).annotations({ identifier: "UpdateTemplateRequest" })

export const TestSendRequest = StrictStruct({
  to: E164,
  channel_id: Schema.optional(IdRef("ch")),
  variables: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })).annotations({
    description: "Missing variables take their `example` (here only)"
  })
}).annotations({ identifier: "TemplateTestSendRequest" })

/**
 * What a provider accepts in a rendered template value, beyond what the API accepts. The sandbox
 * and QR (Baileys, which keeps newlines) accept anything the API accepts; a cloud provider needs
 * stricter values. These are provider capabilities: the send path applies the channel's
 * provider's rules, the template code knows nothing of providers.
 */
export interface TemplateValueRules {
  readonly newlines: boolean
  readonly tabs: boolean
  /** the longest run of spaces allowed, or null for no limit */
  readonly maxSpaceRun: number | null
}

export const TEMPLATE_VALUE_RULES: Record<Provider, TemplateValueRules> = {
  sandbox: { newlines: true, tabs: true, maxSpaceRun: null },
  qr: { newlines: true, tabs: true, maxSpaceRun: null },
  // no cloud adapter yet (channels cannot be created): its documented limits, for when it lands
  cloud: { newlines: false, tabs: false, maxSpaceRun: 4 }
}

/** Why `value` breaks `rules`, or undefined. */
export const valueBreaksProviderRules = (rules: TemplateValueRules, value: string): string | undefined =>
  !rules.newlines && /[\r\n]/.test(value)
    ? "This channel's provider refuses newlines in template values"
    : !rules.tabs && value.includes("\t")
    ? "This channel's provider refuses tabs in template values"
    : rules.maxSpaceRun !== null && value.includes(" ".repeat(rules.maxSpaceRun + 1))
    ? `This channel's provider refuses runs of more than ${rules.maxSpaceRun} spaces in template values`
    : undefined
