/**
 * Templates (docs/API.md "Templates"). Reading and writing templates both need `templates.manage`
 * (the scope list has no `templates.read`: a key that sends by slug needs no read access, the
 * send's errors name what is missing). The test-send is a real send: it also needs `messages.send`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Characters, Errors, Ids, MessageCategory, Messaging, Pagination, Templates } from "@switchboard/domain"
import { Schema } from "effect"
import * as IdempotencyKey from "./IdempotencyKey.js"
import { Authentication, rateLimited, requireScopes } from "./Security.js"
import { sendErrors } from "./SendErrors.js"

const TemplatePath = Schema.Struct({ templateId: Ids.IdRef("tpl") })

const GRAMMAR =
  "Placeholders are `{{name}}`, `name` matching `^[a-z][a-z0-9_]{0,63}$`, no spaces inside the braces; any other `{{` or a stray `}}` is malformed. Characters are Unicode code points; positions count from 0."

export class TemplatesApi extends HttpApiGroup.make("templates")
  .add(
    HttpApiEndpoint.post("create", "/v1/templates")
      .setPayload(Templates.CreateTemplateRequest)
      .addSuccess(Templates.Template, { status: 201 })
      .addError(Errors.Conflict)
      .annotate(
        OpenApi.Description,
        `Creates an active template; \`template.created\` follows. ${GRAMMAR} The body (<= 1 024 characters) and \`variables\` are checked together: malformed braces, a placeholder with no declaration, a declared variable the body never uses, a name declared twice or an example that is empty or over 1 024 characters are 422 \`VALIDATION_ERROR\` with \`details.reason = invalid_template\` and each problem in \`details.issues\` (\`position\` for the body's). Without \`variables\`, each placeholder gets a required variable with no example. A slug already used in the workspace (archived templates included): 409 \`CONFLICT\` with \`details.reason = slug_taken\`.`
      )
      .pipe(requireScopes("templates.manage"))
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/templates")
      .setUrlParams(Schema.Struct({
        ...Pagination.ListParams,
        status: Schema.optional(Templates.TemplateStatus),
        category: Schema.optional(MessageCategory.Category),
        q: Schema.optional(Schema.String.pipe(Characters.minCharacters(1), Characters.maxCharacters(100))).annotations({
          description: "Case-insensitive part of the slug or the name"
        })
      }))
      .addSuccess(Pagination.Page(Templates.Template))
      .annotate(OpenApi.Description, "Newest first; filters `status`, `category`, `q`.")
      .pipe(requireScopes("templates.manage"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/templates/:templateId")
      .setPath(TemplatePath)
      .addSuccess(Templates.Template)
      .addError(Errors.TemplateNotFound)
      .annotate(
        OpenApi.Description,
        "An unknown template (or one of another workspace): 404 `TEMPLATE_NOT_FOUND` with `details.resource = template`."
      )
      .pipe(requireScopes("templates.manage"))
  )
  .add(
    HttpApiEndpoint.patch("update", "/v1/templates/:templateId")
      .setPath(TemplatePath)
      .setPayload(Templates.UpdateTemplateRequest)
      .addSuccess(Templates.Template)
      .addError(Errors.TemplateNotFound)
      .addError(Errors.Conflict)
      .annotate(
        OpenApi.Description,
        `Changes an active template (the slug never changes); \`template.updated\` follows. A new body is checked against the new \`variables\`, or the current ones when none are sent, with the rules of creation (422 \`invalid_template\`). Messages already queued keep the text they were rendered with. An archived template: 409 \`CONFLICT\` with \`details.reason = template_archived\`.`
      )
      .pipe(requireScopes("templates.manage"))
  )
  .add(
    HttpApiEndpoint.del("archive", "/v1/templates/:templateId")
      .setPath(TemplatePath)
      .addSuccess(Templates.Template)
      .addError(Errors.TemplateNotFound)
      .annotate(
        OpenApi.Description,
        "Archives (not deletes); repeatable, `template.archived` once. An archived template cannot be sent (409 `TEMPLATE_NOT_SENDABLE`) and keeps its slug."
      )
      .pipe(requireScopes("templates.manage"))
  )
  .add(
    HttpApiEndpoint.post("testSend", "/v1/templates/:templateId/test-send")
      .setPath(TemplatePath)
      .setPayload(Templates.TestSendRequest)
      .setHeaders(Schema.Struct({
        "idempotency-key": IdempotencyKey.header
      }))
      .addSuccess(Messaging.Message, { status: 201 })
      .pipe(sendErrors)
      .annotate(
        OpenApi.Description,
        "A real send of this template to `to` through `POST /v1/messages` (same checks, errors, events and `Idempotency-Key` rules; the key is bound to this template and body). Variables not given take the variable's `example`, here only: a required variable with neither is 422 `TEMPLATE_VARIABLE_MISSING`. Unknown id: 404 `TEMPLATE_NOT_FOUND` with `details.id`."
      )
      .pipe(requireScopes("templates.manage", "messages.send"), rateLimited("template_test_send"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Templates")
{}
