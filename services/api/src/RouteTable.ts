/**
 * What the contract declares, indexed once: per-route requirements for the authentication
 * middleware and the methods of each path template for 405 answers.
 */
import { HttpApi } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import type { Scopes } from "@switchboard/domain"
import { Context, Option } from "effect"
import * as AST from "effect/SchemaAST"

export interface RouteRequirement {
  readonly scopes: ReadonlyArray<Scopes.Scope>
  readonly sessionOnly: boolean
  /** a test-mode API key only (the sandbox's services refuse others: `SANDBOX_TEST_KEY_REQUIRED`) */
  readonly testKeyOnly: boolean
  readonly workspaceOptional: boolean
  readonly rateLimit: string | null
}

/** Non-contract routes served beside the API. */
export const EXTRA_ROUTES = ["/openapi.json", "/docs"] as const

/** Paths of the console's files: one metrics label for them all. */
const CONSOLE = /^\/console(\/[^/]*)?$/

/** find-my-way's default: a longer path member matches no route. */
export const MAX_PARAM_LENGTH = 100

const decoded = (segment: string) => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** The query parameter names a schema declares (none when the route takes no query). */
const queryNames = (schema: Option.Option<{ readonly ast: AST.AST }>): ReadonlyArray<string> =>
  Option.match(schema, {
    onNone: () => [],
    onSome: ({ ast }) => AST.getPropertySignatures(ast).flatMap((p) => typeof p.name === "string" ? [p.name] : [])
  })

/** Liveness and readiness: their query string is not checked. */
const PROBES: ReadonlySet<string> = new Set(["/health", "/ready"])

export const build = () => {
  const requirements = new Map<string, RouteRequirement>()
  const methodsByTemplate = new Map<string, Set<string>>()
  const queryByRoute = new Map<string, ReadonlyArray<string>>()
  HttpApi.reflect(Api.Api, {
    onGroup() {},
    onEndpoint({ endpoint, mergedAnnotations }) {
      requirements.set(`${endpoint.method} ${endpoint.path}`, {
        scopes: Context.get(mergedAnnotations, Security.RequiredScopes),
        sessionOnly: Context.get(mergedAnnotations, Security.SessionOnly),
        testKeyOnly: Context.get(mergedAnnotations, Security.TestKeyOnly),
        workspaceOptional: Context.get(mergedAnnotations, Security.WorkspaceOptional),
        rateLimit: Context.get(mergedAnnotations, Security.RateLimitRule)
      })
      // the probes answer whatever query an uptime checker adds (a cache-busting `?t=...`): a 422
      // there would read as an unhealthy service (docs/API.md "List filters")
      if (!PROBES.has(endpoint.path)) {
        queryByRoute.set(`${endpoint.method} ${endpoint.path}`, queryNames(endpoint.urlParamsSchema))
      }
      const methods = methodsByTemplate.get(endpoint.path) ?? new Set()
      methods.add(endpoint.method)
      methodsByTemplate.set(endpoint.path, methods)
    }
  })
  for (const path of EXTRA_ROUTES) methodsByTemplate.set(path, new Set(["GET"]))
  const matchers = Array.from(methodsByTemplate, ([template, methods]) => ({
    template,
    regex: new RegExp("^" + template.replace(/:[^/]+/g, "[^/]+") + "/?$"),
    methods: Array.from(methods)
  }))
  // the most specific first: a static segment wins over a parameter (`/v1/x/export` over `/v1/x/:id`)
  const bySpecificity = [...matchers].sort((a, b) =>
    a.template.split(":").length - b.template.split(":").length || b.template.length - a.template.length
  )
  return {
    requirements: requirements as ReadonlyMap<string, RouteRequirement>,
    /** Every fixed segment of a path the server serves (`v1`, `messages`, `read`, `openapi.json`). */
    staticSegments: new Set(
      [...methodsByTemplate.keys(), "/console"].flatMap((t) =>
        t.split("/").filter((s) => s !== "" && !s.startsWith(":"))
      )
    ) as ReadonlySet<string>,
    /**
     * The path template a request path belongs to (`/v1/messages/:messageId`), for metrics labels
     * (bounded: never the raw path); `undefined` when no route has it.
     */
    templateOf: (pathname: string): string | undefined =>
      bySpecificity.find((m) => m.regex.test(pathname))?.template ?? (CONSOLE.test(pathname) ? "/console" : undefined),
    allowedMethods: (pathname: string): ReadonlyArray<string> =>
      matchers.filter((m) => m.regex.test(pathname)).flatMap((m) => m.methods),
    /**
     * The query parameter names the operation a request matches declares (`QueryGuard`);
     * `undefined` when no operation of the contract has this method and path.
     */
    queryNames: (method: string, pathname: string): ReadonlyArray<string> | undefined => {
      const match = bySpecificity.find((m) => m.methods.includes(method) && m.regex.test(pathname))
      return match === undefined ? undefined : queryByRoute.get(`${method} ${match.template}`)
    },
    /** The route template a request matches (`/v1/messages/:messageId`), for span names. */
    template: (method: string, pathname: string): string | undefined =>
      matchers.find((m) => m.methods.includes(method) && m.regex.test(pathname))?.template,
    /**
     * The path members of a request the router found no route for although its method is declared
     * for the path: the router refuses a member longer than `MAX_PARAM_LENGTH` characters.
     */
    overlongParams: (method: string, pathname: string): ReadonlyArray<string> => {
      const match = matchers.find((m) => m.methods.includes(method) && m.regex.test(pathname))
      if (match === undefined) return []
      const segments = pathname.split("/")
      return match.template.split("/").flatMap((part, i) =>
        part.startsWith(":") && decoded(segments[i] ?? "").length > MAX_PARAM_LENGTH ? [part.slice(1)] : []
      )
    }
  }
}

export const routeTable = build()
