/** Templates of a workspace (docs/API.md "Templates"). SQL only: the rules are the Templates use-cases'. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Ids, MessageCategory, type Pagination, type TemplateBody, Templates } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { dieOnDatabaseError, failOnUniqueViolation, iso, isoOrNull, TimestampColumn } from "./Rows.js"

/**
 * A row of `templates`, decoded to the domain's `Template`: the one shape of the resource (as
 * `ContactGroupsRepo`). Ids are checked and typed (`tpl_...`, `ws_...`) while decoding, the
 * timestamps become the wire's ISO strings. On the send path too (`findBySlug`): the mapper this
 * replaces built the same class, which validated the same fields.
 */
export const TemplateRow = Schema.transform(
  Schema.Struct({
    id: Ids.Id("tpl"),
    workspace_id: Ids.Id("ws"),
    slug: Schema.String,
    name: Schema.String,
    category: MessageCategory.Category,
    language: Schema.String,
    body: Schema.String,
    variables: Schema.Array(Schema.Struct({
      name: Schema.String,
      required: Schema.Boolean,
      example: Schema.NullOr(Schema.String)
    })),
    status: Templates.TemplateStatus,
    created_at: TimestampColumn,
    updated_at: TimestampColumn,
    archived_at: Schema.NullOr(TimestampColumn)
  }),
  Templates.Template,
  {
    strict: true,
    decode: (row) => ({
      ...row,
      object: "template" as const,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      archived_at: isoOrNull(row.archived_at)
    }),
    encode: ({ object: _, ...template }) => template
  }
)

export interface TemplateFilters {
  readonly status?: Templates.TemplateStatus | undefined
  readonly category?: MessageCategory.Category | undefined
  /** case-insensitive substring of the slug or the name */
  readonly q?: string | undefined
}

export interface TemplateChanges {
  readonly name?: string | undefined
  readonly category?: MessageCategory.Category | undefined
  readonly language?: string | undefined
  readonly body?: string | undefined
  readonly variables?: ReadonlyArray<TemplateBody.VariableDeclaration> | undefined
}

const decodeRows = Schema.decodeUnknown(Schema.Array(TemplateRow))

const ByWorkspace = Schema.Struct({ workspaceId: Schema.String, key: Schema.String })

/** `%`, `_` and `\` of a search text taken literally in LIKE. */
const likeLiteral = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

export class TemplatesRepo extends Effect.Service<TemplatesRepo>()("@switchboard/db/TemplatesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = Effect.fn("TemplatesRepo.insert")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly slug: string
      readonly name: string
      readonly category: MessageCategory.Category
      readonly language: string
      readonly body: string
      readonly variables: ReadonlyArray<TemplateBody.VariableDeclaration>
      readonly now: string
    }) {
      const rows = yield* sql`INSERT INTO templates (id, workspace_id, slug, name, category, language,
          body, variables, status, created_at, updated_at)
        VALUES (${input.id}, ${input.workspaceId}, ${input.slug}, ${input.name}, ${input.category}, ${input.language},
          ${input.body}, ${JSON.stringify(input.variables)}::jsonb, 'active', ${input.now}, ${input.now})
        RETURNING *`
      return yield* Schema.decodeUnknown(TemplateRow)(rows[0])
    }, failOnUniqueViolation)

    const findOne = SqlSchema.findOne({
      Request: ByWorkspace,
      Result: TemplateRow,
      execute: ({ key, workspaceId }) =>
        sql`SELECT * FROM templates WHERE workspace_id = ${workspaceId} AND id = ${key}`
    })
    const find = Effect.fn("TemplatesRepo.find")(function*(workspaceId: string, id: string) {
      return yield* findOne({ workspaceId, key: id })
    }, dieOnDatabaseError)

    /** The send path's lookup: one read on the (workspace_id, slug) unique index. */
    const findSlug = SqlSchema.findOne({
      Request: ByWorkspace,
      Result: TemplateRow,
      execute: ({ key, workspaceId }) =>
        sql`SELECT * FROM templates WHERE workspace_id = ${workspaceId} AND slug = ${key}`
    })
    const findBySlug = Effect.fn("TemplatesRepo.findBySlug")(function*(workspaceId: string, slug: string) {
      return yield* findSlug({ workspaceId, key: slug })
    }, dieOnDatabaseError)

    const list = Effect.fn("TemplatesRepo.list")(function*(
      workspaceId: string,
      filters: TemplateFilters,
      limit: number,
      after: Pagination.CursorPosition | undefined
    ) {
      const pattern = filters.q === undefined ? undefined : `%${likeLiteral(filters.q.toLowerCase())}%`
      const rows = yield* sql`SELECT * FROM templates WHERE workspace_id = ${workspaceId}
        ${filters.status ? sql`AND status = ${filters.status}` : sql``}
        ${filters.category ? sql`AND category = ${filters.category}` : sql``}
        ${pattern ? sql`AND (slug LIKE ${pattern} OR lower(name) LIKE ${pattern})` : sql``}
        ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
      return yield* decodeRows(rows)
    }, dieOnDatabaseError)

    /** Applies `changes` to an active template; none when it is missing or archived. */
    const update = Effect.fn("TemplatesRepo.update")(function*(
      workspaceId: string,
      id: string,
      changes: TemplateChanges,
      now: string
    ) {
      const rows = yield* sql`UPDATE templates SET
          name = COALESCE(${changes.name ?? null}, name),
          category = COALESCE(${changes.category ?? null}, category),
          language = COALESCE(${changes.language ?? null}, language),
          body = COALESCE(${changes.body ?? null}, body),
          variables = COALESCE(${changes.variables ? JSON.stringify(changes.variables) : null}::jsonb, variables),
          updated_at = ${now}
        WHERE workspace_id = ${workspaceId} AND id = ${id} AND status = 'active'
        RETURNING *`
      return Option.fromNullable((yield* decodeRows(rows))[0])
    }, dieOnDatabaseError)

    /** Archives an active template; none when it was archived already (or is missing). */
    const archive = Effect.fn("TemplatesRepo.archive")(function*(workspaceId: string, id: string, now: string) {
      const rows = yield* sql`UPDATE templates SET status = 'archived', archived_at = ${now}, updated_at = ${now}
        WHERE workspace_id = ${workspaceId} AND id = ${id} AND status = 'active'
        RETURNING *`
      return Option.fromNullable((yield* decodeRows(rows))[0])
    }, dieOnDatabaseError)

    return { insert, find, findBySlug, list, update, archive } as const
  })
}) {}
