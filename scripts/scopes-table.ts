/**
 * Prints the README's endpoint table (method, path, scopes, session-only, rate limit) from the
 * contract itself. `test/readme.test.ts` checks the README carries exactly this table.
 */
import { HttpApi } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Context } from "effect"

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

if (import.meta.url === `file://${process.argv[1]}`) console.log(scopesTable())
