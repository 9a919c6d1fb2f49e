/**
 * Prints docs/API.md's endpoint table (method, path, scopes, session-only, rate limit) and its
 * list filters table (the query parameters each operation takes) from the contract itself.
 * `test/readme.test.ts` checks docs/API.md carries exactly these tables.
 */
import { HttpApi } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Context, Option } from "effect"
import * as AST from "effect/SchemaAST"

export const scopesTable = (): string => {
  const rows: Array<string> = []
  HttpApi.reflect(Api.Api, {
    onGroup() {},
    onEndpoint({ endpoint, mergedAnnotations, middleware }) {
      const secured = middleware.has(Security.Authentication as any)
      const scopes = Context.get(mergedAnnotations, Security.RequiredScopes)
      const sessionOnly = Context.get(mergedAnnotations, Security.SessionOnly)
      const rule = Context.get(mergedAnnotations, Security.RateLimitRule)
      const credential = !secured
        ? "none"
        : sessionOnly
        ? "user session only"
        : Context.get(mergedAnnotations, Security.TestKeyOnly)
        ? "test-mode API key only"
        : "API key or user session"
      rows.push(
        `| ${endpoint.method} | \`${endpoint.path.replace(/:(\w+)/g, "{$1}")}\` | ${credential} | ${
          scopes.length ? scopes.map((s) => `\`${s}\``).join(", ") : "-"
        } | ${rule ?? "-"} |`
      )
    }
  })
  return ["| Method | Path | Credential | Scopes | Rate limit rule |", "|---|---|---|---|---|", ...rows].join("\n")
}

const literalsOf = (ast: AST.AST): Array<string> | undefined => {
  switch (ast._tag) {
    case "Literal":
      return typeof ast.literal === "string" ? [ast.literal] : undefined
    case "Union": {
      const parts = ast.types.filter((t) => t._tag !== "UndefinedKeyword").map(literalsOf)
      return parts.every((p) => p !== undefined) ? parts.flat() : undefined
    }
    case "Refinement":
      return literalsOf(ast.from)
    case "Transformation":
      return literalsOf(ast.to)
    default:
      return undefined
  }
}

/** What a query parameter takes, in words: its values, the id it names, or its description. */
const takes = (name: string, ast: AST.AST): string => {
  if (name === "limit") return "1..100 (default 20)"
  if (name === "after") return "the previous page's `page.next_cursor`"
  const literals = literalsOf(ast)
  if (literals !== undefined) return literals.map((l) => `\`${l}\``).join(", ")
  const text = String(ast)
  const id = /`([a-z]+)_`|\b([a-z]+)_id\b/.exec(text)
  const rest = /\| "none"/.test(text) ? ", or `none`" : ""
  if (id) return `a \`${id[1] ?? id[2]}_...\` id${rest}`
  const description = /& ([A-Z][^|&]*?)\s*(\||$)/.exec(text)?.[1] ?? /^([A-Z][^|&]*?)\s*\|/.exec(text)?.[1]
  return description ?? "text"
}

/** The query parameters of every operation that takes any (docs/API.md "List filters"). */
export const queryTable = (): string => {
  const rows: Array<string> = []
  HttpApi.reflect(Api.Api, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      Option.map(endpoint.urlParamsSchema, ({ ast }) => {
        const params = AST.getPropertySignatures(ast).map((p) =>
          `\`${String(p.name)}\`: ${takes(String(p.name), p.type)}`
        )
        rows.push(`| ${endpoint.method} | \`${endpoint.path.replace(/:(\w+)/g, "{$1}")}\` | ${params.join("; ")} |`)
      })
    }
  })
  return ["| Method | Path | Query parameters |", "|---|---|---|", ...rows].join("\n")
}

/** Every scope some route requires. */
export const requiredScopes = (): ReadonlySet<string> => {
  const used = new Set<string>()
  HttpApi.reflect(Api.Api, {
    onGroup() {},
    onEndpoint({ mergedAnnotations }) {
      for (const scope of Context.get(mergedAnnotations, Security.RequiredScopes)) used.add(scope)
    }
  })
  return used
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(process.argv[2] === "query" ? queryTable() : scopesTable())
}
