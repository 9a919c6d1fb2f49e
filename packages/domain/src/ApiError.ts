/**
 * The SPEC 7 error envelope as typed errors.
 *
 * Every error on the wire is `{"error":{"code","message","details"}}` with `details` always an
 * object (DECISIONS 1). `ApiError<Self>()(tag, { code, status })` builds a `Schema.TaggedError`
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

const envelope = <const Code extends string>(code: Code, details: Schema.Schema<any, any, never>) =>
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

export interface ApiErrorStatics<Code extends string> {
  readonly code: Code
  readonly status: number
}

export type ApiErrorClass<Self, Tag extends string, Code extends string> =
  & Schema.TaggedErrorClass<Self, Tag, { readonly _tag: Schema.tag<Tag> } & typeof fields>
  & ApiErrorStatics<Code>

export const ApiError = <Self>() =>
<const Tag extends string, const Code extends string>(
  tag: Tag,
  options: {
    readonly code: Code
    readonly status: number
    readonly description: string
    /** documents the members of `details` in OpenAPI */
    readonly details?: Schema.Schema<any, any, never>
  }
): ApiErrorClass<Self, Tag, Code> => {
  const Base: any = Schema.TaggedError<any>()(tag, fields)
  const cache = new WeakMap<object, AST.Transformation>()
  class ApiErrorBase extends Base {
    static readonly code: Code = options.code
    static readonly status: number = options.status
    static get ast(): AST.Transformation {
      const cached = cache.get(this)
      if (cached) return cached
      const classAst = Reflect.get(Base, "ast", this) as AST.Transformation
      const Ctor = this as unknown as new(props: { message: string; details?: Details }) => unknown
      const wire = Schema.transform(
        envelope(options.code, options.details ?? Details),
        Schema.make<any, any, never>(classAst.to),
        {
          strict: false,
          decode: (e: { error: { message: string; details: Details } }) =>
            new Ctor({ message: e.error.message, details: e.error.details }),
          encode: (err: { message: string; details?: Details }) => ({
            error: { code: options.code, message: err.message, details: err.details ?? {} }
          })
        }
      ).annotations({
        identifier: tag,
        title: options.code,
        description: options.description,
        ...HttpApiSchema.annotations({ status: options.status })
      })
      cache.set(this, wire.ast as AST.Transformation)
      return wire.ast as AST.Transformation
    }
  }
  return ApiErrorBase as any
}
