/**
 * The error envelope (docs/API.md) as typed errors.
 *
 * Every error on the wire is `{"error":{"code","message","details"}}` with `details` always an
 * object. `ApiError<Self>()(tag, { code, status })` builds a `Schema.TaggedError`
 * class whose schema is a transformation `Envelope(code) <-> instance`: `addError(Cls)` on an
 * endpoint encodes the envelope with the annotated status, OpenAPI documents the envelope, and
 * `HttpApiClient` decodes it back into the class.
 */
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import type * as AST from "effect/SchemaAST"

/** Free-form details object; specific errors document their own members. */
export const Details = Schema.Record({ key: Schema.String, value: Schema.Unknown })
export type Details = typeof Details.Type

const envelope = <const Code extends string>(code: Code, details: Schema.Schema.AnyNoContext) =>
  Schema.Struct({
    error: Schema.Struct({
      code: Schema.Literal(code),
      message: Schema.String,
      details
    })
  })

const fields = {
  message: Schema.String,
  details: Schema.optional(Details)
}

/** What the envelope carries of an error instance. */
interface Wire {
  readonly message: string
  readonly details?: Details | undefined
}

export interface ApiErrorStatics<Code extends string> {
  readonly code: Code
  readonly status: number
}

export type ApiErrorClass<Self, Tag extends string, Code extends string> =
  & Schema.TaggedErrorClass<Self, Tag, { readonly _tag: Schema.tag<Tag> } & typeof fields>
  & ApiErrorStatics<Code>

/** The instance type the class is built for before `retype` gives it its own (`Self`). */
interface Placeholder {
  readonly _tag: string
}

/**
 * Effect's `TaggedError<Self>()` checks with a conditional type that `Self` was given, which
 * TypeScript cannot resolve while `Self` is still a type parameter (as it is inside `ApiError`).
 * So the class is built for `Placeholder` and typed for `Self` here, once: `Self` is the subclass
 * that extends the result (`class X extends ApiError<X>()(...)`), the contract `TaggedError<Self>()`
 * itself relies on. The implementation signature is the only unchecked step.
 */
function retype<Self, Tag extends string, Code extends string>(
  cls: ApiErrorClass<Placeholder, Tag, Code>
): ApiErrorClass<Self, Tag, Code>
function retype(cls: unknown): unknown {
  return cls
}

export const ApiError = <Self>() =>
<const Tag extends string, const Code extends string>(
  tag: Tag,
  options: {
    readonly code: Code
    readonly status: number
    readonly description: string
    /** documents the members of `details` in OpenAPI */
    readonly details?: Schema.Schema.AnyNoContext
  }
): ApiErrorClass<Self, Tag, Code> => {
  const Base = Schema.TaggedError<Placeholder>()(tag, fields)
  const cache = new WeakMap<object, AST.Transformation>()
  class ApiErrorBase extends Base {
    static readonly code: Code = options.code
    static readonly status: number = options.status
    /** The envelope as the class's schema, built for each subclass (its constructor decodes). */
    static get ast(): AST.Transformation {
      const cached = cache.get(this)
      if (cached) return cached
      const classAst = Reflect.get(Base, "ast", this) as AST.Transformation
      const Ctor = this
      const wire = Schema.transform(
        envelope(options.code, options.details ?? Details),
        Schema.make<Wire, Wire, never>(classAst.to),
        {
          strict: false,
          decode: (e: { readonly error: { readonly message: string; readonly details: Details } }) =>
            new Ctor({ message: e.error.message, details: e.error.details }),
          encode: (err: Wire) => ({
            error: { code: options.code, message: err.message, details: err.details ?? {} }
          })
        }
      ).annotations({
        identifier: tag,
        title: options.code,
        description: options.description,
        ...HttpApiSchema.annotations({ status: options.status })
      })
      const ast = wire.ast as AST.Transformation
      cache.set(this, ast)
      return ast
    }
  }
  return retype<Self, Tag, Code>(ApiErrorBase)
}
