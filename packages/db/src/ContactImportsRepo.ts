/** Contact imports (`contact_imports`): the job rows the import worker pulls, with their progress. */
import { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { type ContactCsv, Contacts, Ids, type Pagination } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import * as Notifications from "./Notifications.js"
import { dieOnDatabaseError, iso, isoOrNull, TimestampColumn } from "./Rows.js"

const ImportColumns = Schema.Struct({
  id: Ids.Id("imp"),
  workspace_id: Ids.Id("ws"),
  status: Schema.Literal("queued", "running", "completed", "failed"),
  on_conflict: Schema.Literal("skip", "update"),
  default_country: Schema.NullOr(Schema.String),
  tags: Schema.Array(Schema.String),
  group_id: Schema.NullOr(Ids.Id("grp")),
  total_rows: Schema.Number,
  processed_rows: Schema.Number,
  created: Schema.Number,
  updated: Schema.Number,
  skipped: Schema.Number,
  failed: Schema.Number,
  errors: Schema.Array(Contacts.ImportError),
  created_at: TimestampColumn,
  updated_at: TimestampColumn,
  completed_at: Schema.NullOr(TimestampColumn)
})
export type ImportColumns = typeof ImportColumns.Type
const decodeRows = Schema.decodeUnknown(Schema.Array(ImportColumns))
const FileRow = Schema.Struct({ file: Schema.String })

/**
 * A `contact_imports` row decoded to the domain's `ContactImport`: the one shape of the resource
 * (docs/ARCHITECTURE.md "Adding a resource"). The ids are checked and typed (`imp_...`, `grp_...`)
 * while decoding, the timestamps become the wire's ISO strings; no mapper, no cast. (The import
 * worker reads the job's columns, `ImportColumns`, for its workspace and settings.)
 */
const ImportRow = Schema.transform(
  ImportColumns.pipe(Schema.omit("workspace_id")),
  Contacts.ContactImport,
  {
    strict: true,
    decode: (row) => ({
      ...row,
      object: "contact_import" as const,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      completed_at: isoOrNull(row.completed_at)
    }),
    encode: ({ object: _, ...contactImport }) => contactImport
  }
)
const decodeImports = Schema.decodeUnknown(Schema.Array(ImportRow))

/** What a batch adds to an import's counts. */
export interface ImportProgress {
  readonly rows: number
  readonly created: number
  readonly updated: number
  readonly skipped: number
  readonly failed: number
  readonly errors: ReadonlyArray<ContactCsv.ImportRowError>
}

export const MAX_IMPORT_ERRORS = 100

const COLUMNS = `id, workspace_id, status, on_conflict, default_country, tags, group_id, total_rows, processed_rows,
  created, updated, skipped, failed, errors, created_at, updated_at, completed_at`

export class ContactImportsRepo extends Effect.Service<ContactImportsRepo>()("@switchboard/db/ContactImportsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const select = (where: Statement.Fragment) =>
      sql`SELECT ${sql.literal(COLUMNS)} FROM contact_imports WHERE ${where}`

    const insert = Effect.fn("ContactImportsRepo.insert")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly onConflict: "skip" | "update"
      readonly defaultCountry: string | null
      readonly tags: ReadonlyArray<string>
      readonly groupId: string | null
      readonly file: string
      readonly totalRows: number
      readonly now: string
    }) {
      // the import worker hears of it as the transaction commits (`Notifications`)
      yield* sql`WITH inserted AS (INSERT INTO contact_imports (id, workspace_id, status, on_conflict, default_country,
          tags, group_id, file, total_rows, created_at, updated_at)
        VALUES (${input.id}, ${input.workspaceId}, 'queued', ${input.onConflict}, ${input.defaultCountry},
          ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(input.tags)}::jsonb)), ${input.groupId},
          ${input.file}, ${input.totalRows}, ${input.now}, ${input.now}) RETURNING id)
        SELECT pg_notify(${Notifications.CONTACT_IMPORT_QUEUED}, id) FROM inserted`
    }, dieOnDatabaseError)

    const find = Effect.fn("ContactImportsRepo.find")(function*(workspaceId: string, id: string) {
      const rows = yield* decodeImports(yield* select(sql`workspace_id = ${workspaceId} AND id = ${id}`))
      return Option.fromNullable(rows[0])
    }, dieOnDatabaseError)

    const list = Effect.fn("ContactImportsRepo.list")(
      function*(workspaceId: string, limit: number, after: Pagination.CursorPosition | undefined) {
        const rows = yield* select(sql`workspace_id = ${workspaceId}
          ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
          ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`)
        return yield* decodeImports(rows)
      },
      dieOnDatabaseError
    )

    /** The oldest unfinished import (one left `running` by a dead runner included), marked running. */
    const claimNext = Effect.fn("ContactImportsRepo.claimNext")(function*(now: string) {
      const rows = yield* decodeRows(
        yield* sql`UPDATE contact_imports SET status = 'running', updated_at = ${now}
          WHERE id = (SELECT id FROM contact_imports WHERE status IN ('queued', 'running')
            ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
          RETURNING ${sql.literal(COLUMNS)}`
      )
      return Option.fromNullable(rows[0])
    }, dieOnDatabaseError)

    const file = Effect.fn("ContactImportsRepo.file")(function*(id: string) {
      const rows = yield* Schema.decodeUnknown(Schema.Array(FileRow))(
        yield* sql`SELECT file FROM contact_imports WHERE id = ${id}`
      )
      return rows[0]?.file ?? ""
    }, dieOnDatabaseError)

    /**
     * Adds a batch's counts (inside the batch's transaction), keeping the first 100 errors; the
     * last batch completes the import and drops the stored file.
     */
    const advance = Effect.fn("ContactImportsRepo.advance")(
      function*(id: string, progress: ImportProgress, done: boolean, now: string) {
        const rows = yield* decodeRows(
          yield* sql`UPDATE contact_imports SET
            processed_rows = processed_rows + ${progress.rows},
            created = created + ${progress.created},
            updated = updated + ${progress.updated},
            skipped = skipped + ${progress.skipped},
            failed = failed + ${progress.failed},
            errors = CASE WHEN jsonb_array_length(errors) >= ${MAX_IMPORT_ERRORS} THEN errors ELSE
              (SELECT COALESCE(jsonb_agg(e ORDER BY n), '[]'::jsonb) FROM jsonb_array_elements(errors || ${
            JSON.stringify(progress.errors)
          }::jsonb) WITH ORDINALITY AS x(e, n) WHERE n <= ${MAX_IMPORT_ERRORS}) END,
            status = ${done ? "completed" : "running"},
            completed_at = ${done ? now : null},
            file = ${done ? sql`''` : sql`file`},
            updated_at = ${now}
          WHERE id = ${id} RETURNING ${sql.literal(COLUMNS)}`
        )
        return rows[0]!
      },
      dieOnDatabaseError
    )

    /**
     * Gives an unfinished import up (its runs kept failing): `failed`, counts as they stand, the
     * stored file dropped. `None` when it had finished meanwhile.
     */
    const fail = Effect.fn("ContactImportsRepo.fail")(function*(id: string, now: string) {
      const rows = yield* decodeRows(
        yield* sql`UPDATE contact_imports SET status = 'failed', completed_at = ${now}, file = '', updated_at = ${now}
          WHERE id = ${id} AND status IN ('queued', 'running') RETURNING ${sql.literal(COLUMNS)}`
      )
      return Option.fromNullable(rows[0])
    }, dieOnDatabaseError)

    return { insert, find, list, claimNext, file, advance, fail } as const
  })
}) {}
