export * as SafeEgress from "./SafeEgress.js"
/** Moved to `@switchboard/db` (QR auth state uses it too); re-exported for existing imports. */
export { SecretBox } from "@switchboard/db"
export * as UrlPolicy from "./UrlPolicy.js"
export * as WebhooksConfig from "./WebhooksConfig.js"
export * as WebhookSigner from "./WebhookSigner.js"
