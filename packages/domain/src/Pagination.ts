/**
 * The list envelope and keyset pagination: `limit` 1..100, default 20;
 * `after` is the opaque `next_cursor` of the previous page; newest first (`created_at` desc,
 * then `id` desc), or, for lists of things without a creation time (tags, event types), a stable
 * order of one unique key (`KeyCursor`). A bad `limit` or a malformed `after` is a 422.
 */
import { Either, Encoding, ParseResult, Schema } from "effect"

export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 100

/** The position after which the next page starts. */
export interface CursorPosition {
  readonly created_at: string
  readonly id: string
}

const CursorJson = Schema.parseJson(Schema.Struct({ c: Schema.String, i: Schema.String }))

export const encodeCursor = (position: CursorPosition): string =>
  Encoding.encodeBase64Url(JSON.stringify({ c: position.created_at, i: position.id }))

const isCursorTimestamp = (c: string) => {
  const time = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(c) ? Date.parse(c) : Number.NaN
  return !Number.isNaN(time) && new Date(time).toISOString() === c
}

/** Opaque cursor string <-> position. */
export const Cursor = Schema.transformOrFail(
  Schema.String,
  Schema.Struct({ created_at: Schema.String, id: Schema.String }),
  {
    strict: true,
    decode: (s, _, ast) => {
      const invalid = new ParseResult.Type(ast, s, "Expected a cursor returned as page.next_cursor")
      if (!/^[A-Za-z0-9_-]{1,512}$/.test(s)) return ParseResult.fail(invalid)
      const text = Encoding.decodeBase64UrlString(s)
      const parsed = Either.flatMap(text, (t) => Schema.decodeUnknownEither(CursorJson)(t))
      // only what `encodeCursor` writes: `Date.parse` also takes text the database cannot compare
      if (Either.isLeft(parsed) || !isCursorTimestamp(parsed.right.c)) return ParseResult.fail(invalid)
      return ParseResult.succeed({ created_at: parsed.right.c, id: parsed.right.i })
    },
    encode: (p) => ParseResult.succeed(encodeCursor(p))
  }
).annotations({ identifier: "Cursor", description: "Opaque cursor: the `page.next_cursor` of the previous page" })

const LIMIT_MESSAGE = "Expected an integer between 1 and 100"

/** The transformation's own message would quote the submitted text: never echoed (docs/API.md). */
export const Limit = Schema.NumberFromString.annotations({ message: () => LIMIT_MESSAGE }).pipe(
  Schema.int({ message: () => LIMIT_MESSAGE }),
  Schema.between(1, MAX_LIMIT, { message: () => LIMIT_MESSAGE })
).annotations({ description: "Page size, 1..100 (default 20)" })

/** Query parameters every list accepts; extend with the list's own filters. */
export const ListParams = {
  limit: Schema.optional(Limit),
  after: Schema.optional(Cursor)
}

export interface ListQuery {
  readonly limit?: number | undefined
  readonly after?: CursorPosition | undefined
}

export const PageInfo = Schema.Struct({
  next_cursor: Schema.NullOr(Schema.String),
  has_more: Schema.Boolean
}).annotations({ identifier: "PageInfo" })

/** `{ data: [...], page: { next_cursor, has_more } }` */
export const Page = <A, I, R>(item: Schema.Schema<A, I, R>) =>
  Schema.Struct({ data: Schema.Array(item), page: PageInfo })

export interface PageOf<A> {
  readonly data: ReadonlyArray<A>
  readonly page: { readonly next_cursor: string | null; readonly has_more: boolean }
}

/**
 * Builds a page from rows fetched with `LIMIT limit + 1` in list order: the extra row only
 * tells that there is more.
 */
export const toPage = <Row extends CursorPosition, A>(
  rows: ReadonlyArray<Row>,
  limit: number,
  toItem: (row: Row) => A
): PageOf<A> => {
  const hasMore = rows.length > limit
  const pageRows = hasMore ? rows.slice(0, limit) : rows
  const last = pageRows[pageRows.length - 1]
  return {
    data: pageRows.map(toItem),
    page: { next_cursor: hasMore && last ? encodeCursor(last) : null, has_more: hasMore }
  }
}

const KeyCursorJson = Schema.parseJson(Schema.Struct({ k: Schema.String }))

/** The cursor of a list ordered by one unique text key: the key of the page's last item. */
export const encodeKeyCursor = (key: string): string => Encoding.encodeBase64Url(JSON.stringify({ k: key }))

/**
 * Opaque cursor string <-> the key after which the next page starts, for lists in a stable
 * order of one unique key (tags by name, event types in catalogue order).
 */
export const KeyCursor = Schema.transformOrFail(Schema.String, Schema.String, {
  strict: true,
  decode: (s, _, ast) => {
    const invalid = new ParseResult.Type(ast, s, "Expected a cursor returned as page.next_cursor")
    if (!/^[A-Za-z0-9_-]{1,512}$/.test(s)) return ParseResult.fail(invalid)
    const parsed = Either.flatMap(
      Encoding.decodeBase64UrlString(s),
      (t) => Schema.decodeUnknownEither(KeyCursorJson)(t)
    )
    return Either.isLeft(parsed) ? ParseResult.fail(invalid) : ParseResult.succeed(parsed.right.k)
  },
  encode: (k) => ParseResult.succeed(encodeKeyCursor(k))
}).annotations({ identifier: "KeyCursor", description: "Opaque cursor: the `page.next_cursor` of the previous page" })

/** Query parameters of a list ordered by one unique key. */
export const KeyListParams = {
  limit: Schema.optional(Limit),
  after: Schema.optional(KeyCursor)
}

/** A page from items fetched with `LIMIT limit + 1` in list order, by their unique key. */
export const toKeyPage = <A>(items: ReadonlyArray<A>, limit: number, key: (item: A) => string): PageOf<A> => {
  const hasMore = items.length > limit
  const pageItems = hasMore ? items.slice(0, limit) : items
  const last = pageItems[pageItems.length - 1]
  return {
    data: pageItems,
    page: { next_cursor: hasMore && last !== undefined ? encodeKeyCursor(key(last)) : null, has_more: hasMore }
  }
}
