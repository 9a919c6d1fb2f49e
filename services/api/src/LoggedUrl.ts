/**
 * The request URL as the access log shows it (docs/OPERATING.md "Logs"): a path segment stays
 * only when the contract names it (`v1`, `messages`) or it is a well-formed id (`msg_...`), any
 * other is `*`; a query parameter keeps its name only when the contract declares it, never its
 * value (`?q=*&limit=*`, `?*=*`). A phone number, an e-mail or a search placed in the path or the
 * query therefore never reaches the log, whatever route it was sent to.
 */
import { ContractNames } from "@switchboard/api"
import { routeTable } from "./RouteTable.js"

const ID = /^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/

const segment = (s: string) => (s === "" || routeTable.staticSegments.has(s) || ID.test(s) ? s : "*")

const parameter = (pair: string) => {
  const name = pair.split("=")[0]!
  return `${ContractNames.isContractName(name) ? name : "*"}=*`
}

/** `url` (after `basePath`, which the operator chose and is kept) masked for the log. */
export const masked = (url: string, basePath = ""): string => {
  const prefix =
    basePath !== "" && (url === basePath || url.startsWith(`${basePath}/`) || url.startsWith(`${basePath}?`))
      ? basePath
      : ""
  const rest = url.slice(prefix.length)
  const q = rest.indexOf("?")
  const path = (q < 0 ? rest : rest.slice(0, q)).split("/").map(segment).join("/")
  if (q < 0) return `${prefix}${path}`
  const pairs = rest.slice(q + 1).split("&").filter((pair) => pair !== "")
  return `${prefix}${path}?${pairs.map(parameter).join("&")}`
}
