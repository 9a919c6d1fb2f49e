/**
 * The HTTP contract read back for property tests: every operation of `Api` (found by reflection,
 * so a new endpoint is fuzzed without touching the tests) with the schemas it is built from, and
 * request cases generated from those schemas (`Arbitrary.make`): a valid request, or one broken
 * one way (a member missing, unknown, of the wrong type, over-long, of the wrong format, null, a
 * huge number, a unicode edge case). The schemas are also the oracle: a case the operation's own
 * schema refuses must be answered 422 `VALIDATION_ERROR`.
 */
import { HttpApi } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Ids } from "@switchboard/domain"
import { Arbitrary, Context, Either, FastCheck as fc, Option, ParseResult, Schema } from "effect"
import * as AST from "effect/SchemaAST"

type AnySchema = Schema.Schema<any, any>

export interface Operation {
  readonly name: string
  readonly method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE"
  readonly path: string
  readonly payload: AnySchema | undefined
  readonly pathParams: AnySchema | undefined
  readonly query: AnySchema | undefined
  /** takes an `Idempotency-Key` header */
  readonly idempotent: boolean
  readonly auth: "none" | "key" | "session"
  /** status -> the body schema (undefined: no body) */
  readonly successes: ReadonlyMap<number, AnySchema | undefined>
  readonly errors: ReadonlyMap<number, AnySchema | undefined>
}

const schemaOf = (ast: Option.Option<AST.AST>) => Option.getOrUndefined(Option.map(ast, (a) => Schema.make(a)))

const toMap = (m: ReadonlyMap<number, { readonly ast: Option.Option<AST.AST> }>) =>
  new Map([...m].map(([status, { ast }]) => [status, schemaOf(ast)] as const))

/** Every operation of the contract, creations first and deletions last. */
export const operations: ReadonlyArray<Operation> = (() => {
  const all: Array<Operation> = []
  HttpApi.reflect(Api.Api, {
    onGroup() {},
    onEndpoint({ endpoint, errors, mergedAnnotations, middleware, successes }) {
      const headers = Option.getOrUndefined(endpoint.headersSchema) as AnySchema | undefined
      all.push({
        name: `${endpoint.method} ${endpoint.path}`,
        method: endpoint.method as Operation["method"],
        path: endpoint.path,
        payload: Option.getOrUndefined(endpoint.payloadSchema) as AnySchema | undefined,
        pathParams: Option.getOrUndefined(endpoint.pathSchema) as AnySchema | undefined,
        query: Option.getOrUndefined(endpoint.urlParamsSchema) as AnySchema | undefined,
        idempotent: headers !== undefined &&
          AST.getPropertySignatures(headers.ast).some((p) => p.name === "idempotency-key"),
        auth: !middleware.has(Security.Authentication as never)
          ? "none"
          : Context.get(mergedAnnotations, Security.SessionOnly)
          ? "session"
          : "key",
        successes: toMap(successes),
        errors: toMap(errors)
      })
    }
  })
  const rank = (op: Operation) =>
    op.method === "DELETE" ? 3 : op.method === "POST" && !op.path.includes(":") ? 0 : op.method === "GET" ? 1 : 2
  return all.sort((a, b) => rank(a) - rank(b))
})()

/** The longest path segment the router takes (services/api `RouteTable`). */
const MAX_PARAM_LENGTH = 100

/** What no refusal may contain: every broken value carries it. */
export const MARKER = "Fz9echoQ"

export const KINDS = [
  "missing",
  "unknown",
  "wrongType",
  "overLong",
  "wrongFormat",
  "null",
  "hugeNumber",
  "unicode"
] as const
export type Kind = typeof KINDS[number]

export interface Mutation {
  readonly target: "body" | "path" | "query"
  readonly kind: Kind
  readonly at: number
  readonly variant: number
}

export interface Case {
  readonly body: unknown
  readonly pathParams: Record<string, string> | undefined
  readonly query: Record<string, unknown> | undefined
  readonly pick: ReadonlyArray<number>
  readonly idempotencyKey: string
  readonly mutation: Mutation | null
}

const targets = (op: Operation): ReadonlyArray<Mutation["target"]> => [
  ...(op.payload ? ["body" as const] : []),
  ...(op.pathParams ? ["path" as const] : []),
  ...(op.query ? ["query" as const] : [])
]

/** Valid requests and requests broken one way, half each. */
export const caseArbitrary = (op: Operation): fc.Arbitrary<Case> => {
  const encoded = (schema: AnySchema | undefined) =>
    schema === undefined
      ? fc.constant(undefined)
      : Arbitrary.make(schema).map((value) => Schema.encodeSync(schema)(value))
  return fc.record({
    body: encoded(op.payload),
    pathParams: encoded(op.pathParams),
    query: encoded(op.query),
    pick: fc.array(fc.nat(), { minLength: 2, maxLength: 2 }),
    idempotencyKey: fc.uuid(),
    mutation: fc.option(
      fc.record({
        target: fc.constantFrom(...targets(op)),
        kind: fc.constantFrom(...KINDS),
        at: fc.nat(),
        variant: fc.nat()
      }),
      { freq: 2, nil: null }
    )
  })
}

const HUGE = [1e308, -1e308, 2 ** 53 + 1, -(2 ** 63), 1e-320, 123456789012345678901234567890]
const UNICODE = [
  `${MARKER}\ud800`,
  `\udfff${MARKER}`,
  `\u202e${MARKER}`,
  `e\u0301${MARKER}`,
  `${"💥".repeat(300)}${MARKER}`,
  `\u200b${MARKER}\ufeff`,
  `${MARKER}\uffff`
]
const OTHER_TYPES: ReadonlyArray<unknown> = [42, true, [], {}, [MARKER], { x: MARKER }]

type Slot = readonly [Record<string, unknown> | Array<unknown>, string | number]

const slotsOf = (value: unknown, out: Array<Slot> = []): Array<Slot> => {
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push([value, i])
      slotsOf(v, out)
    })
  } else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      out.push([value as Record<string, unknown>, k])
      slotsOf(v, out)
    }
  }
  return out
}

const objectsOf = (value: unknown): Array<Record<string, unknown>> =>
  [value, ...slotsOf(value).map(([parent, key]) => (parent as Record<string | number, unknown>)[key])]
    .filter((v): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v))

const replacement = (kind: Kind, current: unknown, variant: number, inUrl: boolean): unknown => {
  switch (kind) {
    case "wrongType": {
      const others = OTHER_TYPES.filter((v) =>
        typeof v !== typeof current || Array.isArray(v) !== Array.isArray(current)
      )
      return typeof current === "string" ? others[variant % others.length] : `${MARKER}`
    }
    case "overLong":
      // a URL over the header limit is 431 before any route sees it
      return `${MARKER}${"x".repeat(inUrl ? 2_000 : 70_000)}`
    case "wrongFormat":
      return `${MARKER} is not a valid value`
    case "null":
      return null
    case "hugeNumber":
      return HUGE[variant % HUGE.length]
    default:
      return UNICODE[variant % UNICODE.length]
  }
}

/** `value` (a JSON value, copied) broken one way; the same value when there is nothing to break. */
export const mutate = (value: unknown, mutation: Mutation): unknown => {
  const copy: unknown = value === undefined ? {} : structuredClone(value)
  if (mutation.kind === "unknown") {
    const objects = objectsOf(copy)
    if (objects.length > 0) objects[mutation.at % objects.length]![`x_unexpected_${mutation.variant % 7}`] = MARKER
    return copy
  }
  const slots = slotsOf(copy)
  const inUrl = mutation.target !== "body"
  if (slots.length === 0) {
    return replacement(mutation.kind === "missing" ? "null" : mutation.kind, copy, mutation.variant, inUrl)
  }
  const [parent, key] = slots[mutation.at % slots.length]!
  if (mutation.kind === "missing") {
    if (Array.isArray(parent)) parent.splice(key as number, 1)
    else delete parent[key as string]
  } else {
    ;(parent as Record<string | number, unknown>)[key] = replacement(
      mutation.kind,
      (parent as Record<string | number, unknown>)[key],
      mutation.variant,
      inUrl
    )
  }
  return copy
}

/** What the server receives: JSON goes through text; query and path values are strings. */
export const wireBody = (body: unknown) => JSON.parse(JSON.stringify(body))
export const wireParams = (params: Record<string, unknown>): Record<string, string | Array<string>> =>
  Object.fromEntries(
    Object.entries(params).flatMap(([k, v]) => {
      if (v === undefined) return []
      if (!Array.isArray(v)) return [[k, toParam(v)] as const]
      // a repeated parameter: absent when empty, a single value when once
      return v.length === 0 ? [] : [[k, v.length === 1 ? toParam(v[0]) : v.map(toParam)] as const]
    })
  )

/** A lone surrogate cannot be percent-encoded: it is sent as U+FFFD, as a browser would. */
const wellFormed = (s: string) =>
  s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd")

export const toParam = (v: unknown) => wellFormed(typeof v === "string" ? v : JSON.stringify(v))

export const encodeComponent = (v: string) => encodeURIComponent(wellFormed(v))

/** Does the operation's own schema refuse this (wire) value? */
export const refuses = (schema: AnySchema, value: unknown) =>
  Either.isLeft(Schema.decodeUnknownEither(schema, { errors: "first" })(value))

/**
 * Whether the schema refuses `value` only because ids in it name nothing (docs/API.md "Errors": the
 * resource's 404, not a 422), judged like the server: the first issue, the "undefined" branch of
 * an optional member aside.
 */
export const refusesOnlyUnknownIds = (schema: AnySchema, value: unknown) => {
  const result = Schema.decodeUnknownEither(schema, { errors: "first" })(value)
  if (Either.isRight(result)) return false
  const issues = ParseResult.ArrayFormatter.formatErrorSync(result.left)
  const real = issues.filter((i) => !(i.message.startsWith("Expected undefined") && issues.length > 1))
  return real.length > 0 && real.every((i) => Ids.unknownIdPrefix(i.message) !== undefined)
}

/** Every id in a JSON body (`ch_...`, `cnt_...`), to aim later cases at resources that exist. */
export const idsIn = (value: unknown, out: Array<string> = []): Array<string> => {
  if (typeof value === "string" && /^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/.test(value)) out.push(value)
  else if (Array.isArray(value)) value.forEach((v) => idsIn(v, out))
  else if (typeof value === "object" && value !== null) Object.values(value).forEach((v) => idsIn(v, out))
  return out
}

/** ids seen in answers, by prefix (`ch` -> a few channel ids), to aim later cases at */
export type Pool = Map<string, Array<string>>

/** Ids of the credentials' own user, key and session: never aimed at (revoking them ends the run). */
export const harvest = (pool: Pool, body: unknown, own: ReadonlySet<string>) => {
  for (const id of idsIn(body)) {
    if (own.has(id)) continue
    const prefix = id.split("_")[0]!
    const known = pool.get(prefix) ?? []
    if (!known.includes(id)) pool.set(prefix, [...known, id].slice(-8))
  }
}

const aimed = (pool: Pool, params: Record<string, string>, pick: ReadonlyArray<number>) =>
  Object.fromEntries(
    Object.entries(params).map(([k, v], i) => {
      const known = pool.get(v.split("_")[0]!) ?? []
      const n = pick[i % pick.length]!
      return [k, known.length > 0 && n % 4 !== 0 ? known[n % known.length]! : v]
    })
  )

export interface Prepared {
  readonly method: Operation["method"]
  /** path and query, percent-encoded */
  readonly url: string
  readonly body: string | undefined
  readonly idempotencyKey: string | undefined
  /** the operation's own schemas refuse it: 422 expected */
  readonly broken: boolean
  /** ... only because an id in it names nothing (a malformed id): the resource's 404 expected */
  readonly unknownId: boolean
  readonly label: string
}

/** The request a case stands for, on the wire. */
export const prepare = (op: Operation, c: Case, pool: Pool): Prepared => {
  const m = c.mutation
  const params = c.pathParams && aimed(pool, c.pathParams, c.pick)
  const body = m?.target === "body" ? mutate(c.body, m) : c.body
  // a path member left out leaves the route's own `:name` in the path: one more malformed id
  const pathParams = m?.target === "path" ? mutate(params, m) as Record<string, unknown> : params
  const query = m?.target === "query" ? mutate(c.query, m) as Record<string, unknown> : c.query
  // what the server decodes from the path: a member left out is the route's own `:name`
  const served: Record<string, string> = {}
  for (const [, name] of op.path.matchAll(/:(\w+)/g)) {
    const v = pathParams?.[name!]
    served[name!] = v === undefined ? `:${name}` : toParam(v)
  }
  // a segment longer than the router takes is refused before the route is known: 422
  const overlong = Object.values(served).some((v) => v.length > MAX_PARAM_LENGTH)
  // in the server's order: path, body, query; the first part refused decides
  const parts: ReadonlyArray<readonly [AnySchema | undefined, () => unknown]> = [
    [op.pathParams, () => served],
    [op.payload, () => wireBody(body)],
    [op.query, () => wireParams(query ?? {})]
  ]
  const refused = parts.find(([schema, value]) => schema !== undefined && refuses(schema, value()))
  const broken = overlong || refused !== undefined
  const unknownId = !overlong && refused !== undefined && refusesOnlyUnknownIds(refused[0]!, refused[1]())
  let path = op.path
  for (const [k, v] of Object.entries(pathParams ?? {})) path = path.replace(`:${k}`, encodeComponent(toParam(v)))
  const pairs = Object.entries(wireParams(query ?? {})).flatMap(([k, v]) =>
    (Array.isArray(v) ? v : [v]).map((x) => `${k}=${encodeComponent(x)}`)
  )
  return {
    method: op.method,
    url: pairs.length > 0 ? `${path}?${pairs.join("&")}` : path,
    body: body === undefined ? undefined : JSON.stringify(body),
    idempotencyKey: op.idempotent ? c.idempotencyKey : undefined,
    broken,
    unknownId,
    label: `${op.name} ${m ? `${m.kind} in ${m.target} (at ${m.at}, variant ${m.variant})` : "valid"}`
  }
}

export interface Answer {
  readonly status: number
  readonly text: string
}

export const VIOLATIONS = [
  "5xx",
  "broken not 422",
  "unknown id not 404",
  "422 without issues",
  "echo",
  "code in message",
  "undocumented status",
  "undecodable",
  "repeat differs"
] as const
export type Violation = typeof VIOLATIONS[number]

const parse = (text: string): unknown => {
  try {
    return text === "" ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/** TypeScript or Effect syntax where a sentence belongs: backticks, `${`, `readonly`, `|` unions, braces. */
export const CODE_SYNTAX = /`|\$\{|\breadonly\b|\s\|\s|[{}<>]|=>/

const codeInMessage = (body: unknown): boolean => {
  const error = (body as { error?: { message?: unknown; details?: { issues?: unknown } } } | undefined)?.error
  const messages = [
    error?.message,
    ...(Array.isArray(error?.details?.issues) ? error.details.issues : []).map((i) =>
      (i as { message?: unknown }).message
    )
  ]
  return messages.some((m) => typeof m === "string" && CODE_SYNTAX.test(m))
}

/** What is wrong with `answer` to `request` (empty: the contract held). */
export const judge = (op: Operation, request: Prepared, answer: Answer): Array<Violation> => {
  const out: Array<Violation> = []
  const body = parse(answer.text) as { error?: { code?: unknown; details?: { issues?: unknown } } } | undefined
  if (answer.status >= 500) out.push("5xx")
  if (request.unknownId) {
    if (answer.status !== 404 || !String(body?.error?.code).endsWith("NOT_FOUND")) out.push("unknown id not 404")
    if (answer.text.includes(MARKER)) out.push("echo")
  } else if (request.broken) {
    if (answer.status !== 422 || body?.error?.code !== "VALIDATION_ERROR") out.push("broken not 422")
    else if (!Array.isArray(body.error.details?.issues) || body.error.details.issues.length === 0) {
      out.push("422 without issues")
    }
    if (answer.text.includes(MARKER)) out.push("echo")
    if (codeInMessage(body)) out.push("code in message")
  }
  const declared = answer.status < 300 ? op.successes : op.errors
  if (!declared.has(answer.status)) out.push("undocumented status")
  else {
    const schema = declared.get(answer.status)
    const decodes = schema === undefined
      ? answer.text === ""
      : Either.isRight(Schema.decodeUnknownEither(schema)(body))
    if (!decodes) out.push("undecodable")
  }
  return out
}

/** Characters a path segment may not hold unencoded (besides `;` and `#`), and a broken escape. */
export const UNROUTABLE = ["\"", "<", ">", "\\", "^", "`", "{", "|", "}", "[", "]", "%zz", "%4", "\u00e9"] as const

export interface ShapedPath {
  readonly label: string
  /** the request target, sent as it is (not encoded again) */
  readonly path: string
}

/**
 * `path` with a raw `;` or `#` (alone or followed by text) at the end of each of its segments, and
 * one other character no segment may hold unencoded (rotating through `UNROUTABLE` with `seed`):
 * shapes a router that cuts the path at `;`/`#` would route to another action.
 */
export const shapedPaths = (path: string, seed = 0): ReadonlyArray<ShapedPath> => {
  const segments = path.split("/")
  const out: Array<ShapedPath> = []
  for (let i = 1; i < segments.length; i++) {
    const other = UNROUTABLE[(seed + i) % UNROUTABLE.length]!
    for (const insert of [";", ";x=1", "#", "#x", other]) {
      const shaped = segments.map((s, j) => (j === i ? `${s}${insert}` : s)).join("/")
      out.push({ label: `${JSON.stringify(insert)} after segment ${i} of ${path}`, path: shaped })
    }
  }
  return out
}
