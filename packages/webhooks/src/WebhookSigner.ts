/**
 * The signature (docs/WEBHOOKS.md "Webhooks"): `v1=` + lowercase hex HMAC-SHA256 of `${timestamp}.${rawBody}`, one entry per active
 * secret, newest first. The HMAC key is the whole secret string as UTF-8.
 */
import { createHmac, randomBytes } from "node:crypto"

export const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`

export const signature = (secret: string, timestamp: number, body: string) =>
  `v1=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`

export const signatureHeader = (secrets: ReadonlyArray<string>, timestamp: number, body: string) =>
  secrets.map((s) => signature(s, timestamp, body)).join(",")
