/**
 * The address people reach the server at, for every link the server builds (the verification
 * e-mail, the start-up line): `PUBLIC_URL` when set (as it is, the public side of any proxy and
 * prefix), else the address the HTTP server listens on with `BASE_PATH` (a wildcard listener,
 * 0.0.0.0 or ::, is shown as localhost), else (no listener: the operator CLI) the default port.
 */
import type { HttpServer } from "@effect/platform"

export interface Listening {
  /** `PUBLIC_URL`, when set */
  readonly publicUrl: string | undefined
  /** the HTTP server's address, when this process listens */
  readonly address: HttpServer.Address | undefined
  readonly basePath: string
}

/** The default when nothing else says where the server is (`HTTP_PORT`'s default). */
export const FALLBACK = "http://localhost:3000"

export const of = ({ address, basePath, publicUrl }: Listening): string => {
  if (publicUrl !== undefined && publicUrl.trim() !== "") return publicUrl.trim().replace(/\/+$/, "")
  if (address === undefined) return `${FALLBACK}${basePath}`
  if (address._tag === "UnixAddress") return `unix:${address.path}${basePath}`
  const host = ["0.0.0.0", "::", ""].includes(address.hostname)
    ? "localhost"
    : address.hostname.includes(":")
    ? `[${address.hostname}]`
    : address.hostname
  return `http://${host}:${address.port}${basePath}`
}
