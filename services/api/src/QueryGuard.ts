/**
 * The query string checked like a body (docs/API.md "Errors"), before anything decodes it: a
 * parameter the operation does not declare is 422 at its position in the query string
 * (`["query", 1]`: its name is text the client chose, never repeated), and a declared parameter
 * given more than once is 422 at its name (parsers disagree on which one wins, as for a member
 * named twice in a body).
 */
import type { Issues } from "@switchboard/api"

/** The pairs of a query string as the router decodes them (`+` is a space). */
const pairsOf = (url: string): ReadonlyArray<string> => {
  const q = url.indexOf("?")
  if (q < 0) return []
  return Array.from(new URLSearchParams(url.slice(q + 1)).keys())
}

const takes = (declared: ReadonlyArray<string>) =>
  declared.length === 0
    ? "Unknown query parameter; this operation takes none"
    : `Unknown query parameter; this operation takes ${declared.join(", ")}`

/** Every issue of the query of `url` against the names its operation declares; empty when none. */
export const check = (url: string, declared: ReadonlyArray<string>): ReadonlyArray<Issues.Issue> => {
  const issues: Array<Issues.Issue> = []
  const seen = new Set<string>()
  const repeated = new Set<string>()
  pairsOf(url).forEach((name, position) => {
    if (!declared.includes(name)) {
      issues.push({ path: ["query", position], message: takes(declared) })
    } else if (seen.has(name) && !repeated.has(name)) {
      repeated.add(name)
      issues.push({ path: [name], message: "Query parameter given more than once; give it once" })
    }
    seen.add(name)
  })
  return issues
}
