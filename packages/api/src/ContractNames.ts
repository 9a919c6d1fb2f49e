/**
 * The member names the contract declares (`to`, `text`, `body`, `channel_id`, ...), collected once
 * from every operation's body, path, query and header schemas. Error paths name a member only when
 * it is one of these (docs/API.md "Errors"): any other name in a request (an unknown member, a key of
 * `metadata`, `attributes` or `variables`) is text the client chose, and is never repeated back.
 */
import { HttpApi } from "@effect/platform"
import { Option } from "effect"
import * as AST from "effect/SchemaAST"
import { Api } from "./Api.js"

const collect = (ast: AST.AST, out: Set<string>, seen: Set<AST.AST>): void => {
  if (seen.has(ast)) return
  seen.add(ast)
  switch (ast._tag) {
    case "TypeLiteral":
      for (const p of ast.propertySignatures) {
        if (typeof p.name === "string") out.add(p.name)
        collect(p.type, out, seen)
      }
      for (const i of ast.indexSignatures) collect(i.type, out, seen)
      return
    case "Union":
      return ast.types.forEach((t) => collect(t, out, seen))
    case "TupleType":
      ast.elements.forEach((e) => collect(e.type, out, seen))
      return ast.rest.forEach((r) => collect(r.type, out, seen))
    case "Refinement":
      return collect(ast.from, out, seen)
    case "Transformation":
      collect(ast.from, out, seen)
      return collect(ast.to, out, seen)
    case "Suspend":
      return collect(ast.f(), out, seen)
    case "Declaration":
      return ast.typeParameters.forEach((t) => collect(t, out, seen))
    default:
      return
  }
}

/** Free-form maps: their keys are the client's own names. */
export const FREE_FORM_MAPS: ReadonlySet<string> = new Set(["metadata", "attributes", "variables"])

const names = (() => {
  const out = new Set<string>(["body", "content-type", "x-workspace-id", "idempotency-key"])
  const seen = new Set<AST.AST>()
  HttpApi.reflect(Api, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      for (
        const schema of [endpoint.payloadSchema, endpoint.pathSchema, endpoint.urlParamsSchema, endpoint.headersSchema]
      ) {
        Option.map(schema, (s) => collect(s.ast, out, seen))
      }
    }
  })
  return out
})()

export const isContractName = (name: string): boolean => names.has(name)

/**
 * `path` up to its first segment the client named (a member the contract does not declare, or a
 * key of a free-form map): the issue is reported at the object that holds it.
 */
export const declaredPrefix = (path: ReadonlyArray<string | number>): Array<string | number> => {
  const out: Array<string | number> = []
  for (const [i, segment] of path.entries()) {
    if (typeof segment === "string") {
      const previous = path[i - 1]
      if (!isContractName(segment)) return out
      if (typeof previous === "string" && FREE_FORM_MAPS.has(previous)) return out
    }
    out.push(segment)
  }
  return out
}
