/**
 * Which request targets reach the router (docs/API.md, hostile input). The router cuts a path at
 * a raw `;` or `#` as if the rest were a query (`/v1/contact-groups/g;x/members/c` would be routed
 * as `/v1/contact-groups/g`, a different action), so a path is routed only when every character is
 * one a path segment may hold unencoded (RFC 3986 `pchar` and `/`, without `;`) or a well-formed
 * percent escape. `%3B` stays part of its segment. A raw `#` is refused anywhere in the target: it
 * starts a fragment, which a client never sends.
 */

/** unreserved, the sub-delims without `;`, `:`, `@`, `/`, and `%HH` */
const ROUTABLE_PATH = /^(?:[A-Za-z0-9\-._~!$&'()*+,=:@/]|%[0-9A-Fa-f]{2})*$/

/** Is `url` (the request target: path and optional query) one the router may see as it is? */
export const isRoutable = (url: string): boolean => {
  if (url.includes("#")) return false
  const q = url.indexOf("?")
  return ROUTABLE_PATH.test(q < 0 ? url : url.slice(0, q))
}
