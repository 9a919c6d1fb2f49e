/**
 * Verifies a webhook (docs/WEBHOOKS.md "Webhooks"): HMAC-SHA256 over `${timestamp}.${rawBody}` (the raw
 * bytes, never re-serialised JSON), any `v1=` entry matching any of your secrets (rotation
 * overlap), compared in constant time, and a timestamp within the tolerance in BOTH directions.
 */
import { Either, Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { WebhookEvent } from "./WebhookEvent.js"

export type VerifyFailure =
  | "missing_headers"
  | "timestamp_out_of_tolerance"
  | "no_matching_signature"
  | "malformed_body"

export type VerifyResult =
  | { readonly valid: true; readonly event: WebhookEvent }
  | { readonly valid: false; readonly reason: VerifyFailure }

type HeaderBag = Headers | Record<string, string | ReadonlyArray<string> | undefined>

const header = (headers: HeaderBag, name: string): string | undefined => {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined
  const bag = headers as Record<string, string | ReadonlyArray<string> | undefined>
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name)
  const value = key === undefined ? undefined : bag[key]
  return Array.isArray(value) ? value[0] : (value as string | undefined)
}

const V1_ENTRY = /^v1=[0-9a-f]{64}$/

const USAGE = "verifyWebhook(rawBody, headers, secrets)"

/**
 * A call that cannot be what was meant (an argument left out or of the wrong kind): a `TypeError`
 * naming the argument and what to pass, not a failure deep inside.
 */
const checkArguments = (rawBody: unknown, headers: unknown, secrets: unknown) => {
  if (typeof rawBody !== "string" && !(rawBody instanceof Uint8Array)) {
    throw new TypeError(
      `${USAGE}: rawBody must be the request body as received, a string or a Buffer/Uint8Array (not parsed JSON)`
    )
  }
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    throw new TypeError(
      `${USAGE}: headers is missing or not an object; pass the delivery's request headers (req.headers in Node's http, request.headers with fetch)`
    )
  }
  const list = typeof secrets === "string" ? [secrets] : secrets
  if (!Array.isArray(list) || list.length === 0 || list.some((s) => typeof s !== "string" || s === "")) {
    throw new TypeError(
      `${USAGE}: secrets must be your endpoint's signing secret (whsec_...), or a list of them during a rotation`
    )
  }
}

const decode = Schema.decodeUnknownEither(Schema.parseJson(WebhookEvent))

export const verifyWebhook = (
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secrets: string | ReadonlyArray<string>,
  options: { readonly toleranceSeconds?: number; readonly now?: Date } = {}
): VerifyResult => {
  checkArguments(rawBody, headers, secrets)
  const timestamp = header(headers, "x-webhook-timestamp")
  const signatures = header(headers, "x-webhook-signature")
  if (!timestamp || !signatures || !/^\d+$/.test(timestamp)) return { valid: false, reason: "missing_headers" }
  const tolerance = options.toleranceSeconds ?? 300
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000)
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) {
    return { valid: false, reason: "timestamp_out_of_tolerance" }
  }
  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : Buffer.from(rawBody)
  // only well-formed entries: Buffer's hex decoding stops silently at the first bad character,
  // so `v1=<valid>junk` would otherwise pass as `v1=<valid>`
  const given = signatures.split(",").map((s) => s.trim()).filter((s) => V1_ENTRY.test(s)).map((s) =>
    Buffer.from(s.slice(3), "hex")
  )
  const matches = (typeof secrets === "string" ? [secrets] : secrets).some((secret) => {
    const expected = createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest()
    return given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))
  })
  if (!matches) return { valid: false, reason: "no_matching_signature" }
  const event = decode(body.toString("utf8"))
  return Either.isRight(event) ? { valid: true, event: event.right } : { valid: false, reason: "malformed_body" }
}
