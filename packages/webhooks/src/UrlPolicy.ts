/**
 * Where webhooks may go: absolute http(s), no credentials, port 80/443,
 * and every address the host resolves to must be public unicast — refused: loopback, private,
 * link-local (incl. cloud metadata), unique-local, CGNAT, multicast, unspecified, broadcast,
 * documentation/reserved ranges, in IPv4, IPv6 and IPv4-mapped IPv6. Checked at creation AND
 * at every attempt; the connection then goes to the checked address.
 */
import ipaddr from "ipaddr.js"
import { lookup } from "node:dns/promises"
import { isIP } from "node:net"

export type Refusal =
  | "invalid_url"
  | "unsupported_scheme"
  | "credentials_in_url"
  | "port_not_allowed"
  | "unresolvable_host"
  | "private_address"

export interface Target {
  readonly url: URL
  readonly address: string
  readonly family: 4 | 6
}

/** The deprecated IPv4-compatible block `::/96` (RFC 4291 2.5.5.1), which ipaddr.js calls unicast. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR("::/96")

/**
 * The range name of an address, IPv4-mapped IPv6 judged as its IPv4 address. IPv4-compatible
 * addresses (`::7f00:1`, i.e. `::127.0.0.1`) are refused as a whole: a stack that still routes
 * them reaches the embedded IPv4 address, and no public receiver uses one.
 */
export const rangeOf = (address: string): string => {
  let parsed = ipaddr.parse(address)
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address()
    else if (v6.range() === "unicast" && v6.match(IPV4_COMPATIBLE)) return "ipv4Compatible"
  }
  return parsed.range()
}

export const isPublicAddress = (address: string) => ipaddr.isValid(address) && rangeOf(address) === "unicast"

/** The static checks (no DNS). */
export const checkUrl = (raw: string, allowPrivate: boolean): URL | Refusal => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return "invalid_url"
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "unsupported_scheme"
  if (url.username !== "" || url.password !== "") return "credentials_in_url"
  if (!allowPrivate && url.port !== "" && url.port !== "80" && url.port !== "443") return "port_not_allowed"
  return url
}

export type Resolver = (host: string) => Promise<ReadonlyArray<{ readonly address: string; readonly family: number }>>

/** The system resolver (all addresses, as the OS returns them). */
export const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true })

/** `resolver`, but a lookup that has not answered after `timeoutMs` fails (a timer only while one is pending). */
const lookupWithin = (resolver: Resolver, host: string, timeoutMs: number) =>
  new Promise<Awaited<ReturnType<Resolver>>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer for ${host} within ${timeoutMs} ms`)), timeoutMs)
    resolver(host).then(
      (addresses) => {
        clearTimeout(timer)
        resolve(addresses)
      },
      (error) => {
        clearTimeout(timer)
        reject(error)
      }
    )
  })

/**
 * Resolves the host once and checks every address; returns the one to connect to. A lookup that
 * fails, or (with `timeoutMs`) does not answer in time, is `unresolvable_host`.
 */
export const resolveTarget = async (
  raw: string,
  allowPrivate: boolean,
  resolver: Resolver = systemResolver,
  timeoutMs?: number
): Promise<Target | Refusal> => {
  const url = checkUrl(raw, allowPrivate)
  if (typeof url === "string") return url
  const host = url.hostname.replace(/^\[|\]$/g, "")
  let addresses: ReadonlyArray<{ readonly address: string; readonly family: number }>
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }]
  } else {
    try {
      addresses = await (timeoutMs === undefined ? resolver(host) : lookupWithin(resolver, host, timeoutMs))
    } catch {
      return "unresolvable_host"
    }
  }
  if (addresses.length === 0) return "unresolvable_host"
  if (!allowPrivate && addresses.some((a) => !isPublicAddress(a.address))) return "private_address"
  const chosen = addresses[0]!
  return { url, address: chosen.address, family: chosen.family === 6 ? 6 : 4 }
}
