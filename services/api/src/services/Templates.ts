/**
 * Template use-cases (docs/API.md "Templates"): CRUD with strict placeholders, archiving, and the
 * test-send, a real send through `Messages.send` (same checks, same events) whose variables
 * default to each declared `example`, there only.
 */
import type { Security } from "@switchboard/api"
import { EventsRepo, TemplatesRepo, Transactions } from "@switchboard/db"
import {
  Errors,
  Events,
  Ids,
  type MessageCategory,
  Pagination,
  Schemas,
  TemplateBody,
  type Templates as DomainTemplates
} from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"
import { Messages } from "./Messages.js"

type VariablesInput = ReadonlyArray<
  { readonly name: string; readonly required?: boolean | undefined; readonly example?: string | null | undefined }
>

const declarations = (input: VariablesInput | undefined): ReadonlyArray<TemplateBody.VariableDeclaration> | undefined =>
  input?.map((v) => ({ name: v.name, required: v.required ?? true, example: v.example ?? null }))

/** The body and declarations checked together: 422 with every issue (positions for the body's). */
const checked = (body: string, declared: ReadonlyArray<TemplateBody.VariableDeclaration> | undefined) =>
  Effect.gen(function*() {
    const { issues, variables } = TemplateBody.checkTemplate(body, declared)
    if (issues.length > 0) {
      return yield* new Errors.ValidationError({
        message: "The template's body or variables are invalid",
        details: {
          reason: "invalid_template",
          issues: issues.map((i) => ({
            path: [...i.path],
            message: i.message,
            ...(i.position === undefined ? {} : { position: i.position })
          }))
        }
      })
    }
    return variables
  })

const notFound = (id: string) =>
  new Errors.TemplateNotFound({ message: `No template ${id} in this workspace`, details: { resource: "template", id } })

const templateEvent = (
  type: "template.created" | "template.updated" | "template.archived",
  t: DomainTemplates.Template
) => Events.DomainEvent.make(type, { object: "template", object_id: t.id, template_id: t.id, status: t.status })

export class Templates extends Effect.Service<Templates>()("@switchboard/service-api/Templates", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const repo = yield* TemplatesRepo.TemplatesRepo
    const events = yield* EventsRepo.EventsRepo
    const messages = yield* Messages
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

    const create = Effect.fn("Templates.create")(
      function*(workspaceId: string, input: typeof DomainTemplates.CreateTemplateRequest.Type) {
        const variables = yield* checked(input.body, declarations(input.variables))
        const at = yield* now
        const id = yield* Ids.newId("tpl")
        return yield* transactions.run(Effect.gen(function*() {
          const template = yield* repo.insert({
            id,
            workspaceId,
            slug: input.slug,
            name: input.name,
            category: input.category,
            language: input.language ?? "en",
            body: input.body,
            variables,
            now: at
          }).pipe(Effect.catchTag("UniqueViolation", () =>
            new Errors.Conflict({
              message: "A template with that slug already exists in this workspace (archived ones included)",
              details: { reason: "slug_taken", field: "slug" }
            })))
          yield* events.append({ workspaceId, event: templateEvent("template.created", template), occurredAt: at })
          return template
        }))
      }
    )

    const get = Effect.fn("Templates.get")(function*(workspaceId: string, id: string) {
      const found = yield* repo.find(workspaceId, id)
      if (Option.isNone(found)) return yield* notFound(id)
      return found.value
    })

    const list = Effect.fn("Templates.list")(function*(workspaceId: string, query: {
      readonly limit?: number | undefined
      readonly after?: Pagination.CursorPosition | undefined
      readonly status?: DomainTemplates.TemplateStatus | undefined
      readonly category?: MessageCategory.Category | undefined
      readonly q?: string | undefined
    }) {
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      const rows = yield* repo.list(workspaceId, query, limit, query.after)
      return Pagination.toPage(rows, limit, (t) => t)
    })

    /**
     * Changes an active template. The new body and the declarations (the new ones, or the
     * current ones) are checked together; messages already queued keep the text they were
     * rendered with.
     */
    const update = Effect.fn("Templates.update")(
      function*(workspaceId: string, id: string, changes: typeof DomainTemplates.UpdateTemplateRequest.Type) {
        const current = yield* get(workspaceId, id)
        if (current.status === "archived") {
          return yield* new Errors.Conflict({
            message: "An archived template cannot be changed",
            details: { reason: "template_archived" }
          })
        }
        const declared = declarations(changes.variables)
        const variables = changes.body !== undefined || declared !== undefined
          ? yield* checked(changes.body ?? current.body, declared ?? current.variables)
          : undefined
        const at = yield* now
        return yield* transactions.run(Effect.gen(function*() {
          const updated = yield* repo.update(workspaceId, id, {
            name: changes.name,
            category: changes.category,
            language: changes.language,
            body: changes.body,
            variables
          }, at)
          if (Option.isNone(updated)) {
            // archived in the meantime
            return yield* new Errors.Conflict({
              message: "An archived template cannot be changed",
              details: { reason: "template_archived" }
            })
          }
          yield* events.append({ workspaceId, event: templateEvent("template.updated", updated.value), occurredAt: at })
          return updated.value
        }))
      }
    )

    /** Archives (repeatable): `template.archived` once, the archived template every time. */
    const archive = Effect.fn("Templates.archive")(function*(workspaceId: string, id: string) {
      const at = yield* now
      const archived = yield* transactions.run(Effect.gen(function*() {
        const moved = yield* repo.archive(workspaceId, id, at)
        if (Option.isSome(moved)) {
          yield* events.append({ workspaceId, event: templateEvent("template.archived", moved.value), occurredAt: at })
        }
        return moved
      }))
      return Option.isSome(archived) ? archived.value : yield* get(workspaceId, id)
    })

    /** A real send of the template; missing variables take their `example` (here only). */
    const testSend = Effect.fn("Templates.testSend")(function*(
      principal: Security.Principal,
      id: string,
      input: typeof DomainTemplates.TestSendRequest.Type,
      idempotencyKey: string | undefined
    ) {
      const found = yield* repo.find(principal.workspaceId, id)
      if (Option.isNone(found)) {
        return yield* new Errors.TemplateNotFound({
          message: `No template ${id} in this workspace`,
          details: { resource: "template", id }
        })
      }
      const template = found.value
      const variables: Record<string, string> = {}
      for (const v of template.variables) if (v.example !== null) variables[v.name] = v.example
      Object.assign(variables, input.variables ?? {})
      return yield* messages.send(
        principal,
        {
          to: input.to,
          ...(input.channel_id === undefined ? {} : { channel_id: input.channel_id }),
          template: { slug: template.slug, variables }
        },
        idempotencyKey,
        { fingerprint: { test_send: template.id, ...input }, variablesPath: ["variables"] }
      ).pipe(
        // only a send naming a stored media can be NotFound: a template send names none
        Effect.catchTag("NotFound", Effect.die)
      )
    })

    return { create, get, list, update, archive, testSend } as const
  }),
  dependencies: [
    TemplatesRepo.TemplatesRepo.Default,
    EventsRepo.EventsRepo.Default,
    Transactions.Transactions.Default,
    Messages.Default
  ]
}) {}
