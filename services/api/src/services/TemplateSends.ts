/**
 * What a template send checks before anything is written (docs/API.md "Templates"): one indexed read
 * of the template by slug, then the pure render (`renderTemplate`) and the channel's provider's
 * value rules (`TEMPLATE_VALUE_RULES`, a provider capability). Nothing is substituted silently.
 */
import { TemplatesRepo } from "@switchboard/db"
import { Errors, type Messaging, TemplateBody, Templates } from "@switchboard/domain"
import { Effect, Option } from "effect"

export interface PreparedTemplateSend {
  readonly template: Templates.Template
  /** the rendered text */
  readonly body: string
  readonly variables: Record<string, string>
}

export class TemplateSends extends Effect.Service<TemplateSends>()("@switchboard/service-api/TemplateSends", {
  effect: Effect.gen(function*() {
    const repo = yield* TemplatesRepo.TemplatesRepo

    /**
     * The template named `slug`, rendered with `variables` for a channel of `provider`. `path`
     * is where the variables sit in the request (`["template", "variables"]` for a send).
     */
    const prepare = Effect.fn("TemplateSends.prepare")(function*(input: {
      readonly workspaceId: string
      readonly slug: string
      readonly variables: Readonly<Record<string, string>>
      readonly provider: Messaging.Provider
      readonly path: ReadonlyArray<string>
    }) {
      const found = yield* repo.findBySlug(input.workspaceId, input.slug)
      if (Option.isNone(found)) {
        return yield* new Errors.TemplateNotFound({
          message: "No template with this slug in this workspace",
          details: { resource: "template" }
        })
      }
      const template = found.value
      if (template.status !== "active") {
        return yield* new Errors.TemplateNotSendable({
          message: "This template is archived and cannot be sent",
          details: { reason: "template_archived", id: template.id }
        })
      }
      const rendered = TemplateBody.renderTemplate(template, input.variables, input.path)
      if (rendered._tag === "Missing") {
        return yield* new Errors.TemplateVariableMissing({
          message: `Required template variables not supplied: ${rendered.missing.join(", ")}`,
          details: { missing: rendered.missing }
        })
      }
      if (rendered._tag === "Invalid") {
        // unknown names are the request's own text: counted, never repeated (docs/API.md "Errors")
        const unknown = rendered.issues.filter((i) => i.message.startsWith("Unknown")).length
        return yield* new Errors.ValidationError({
          message: unknown > 0
            ? `${unknown} variable${unknown === 1 ? " is" : "s are"} not declared by this template`
            : "Template variables failed validation",
          details: {
            reason: "invalid_template_variables",
            issues: rendered.issues.map((i) => ({ path: [...i.path], message: i.message }))
          }
        })
      }
      const rules = Templates.TEMPLATE_VALUE_RULES[input.provider]
      const refused = Object.entries(input.variables).flatMap(([name, value]) => {
        const reason = Templates.valueBreaksProviderRules(rules, value)
        return reason === undefined ? [] : [{ path: [...input.path, name], message: reason }]
      })
      if (refused.length > 0) {
        return yield* new Errors.ValidationError({
          message: "Template values this channel's provider would refuse",
          details: { reason: "provider_value_rules", issues: refused }
        })
      }
      return { template, body: rendered.body, variables: { ...input.variables } } satisfies PreparedTemplateSend
    })

    return { prepare } as const
  }),
  dependencies: [TemplatesRepo.TemplatesRepo.Default]
}) {}
