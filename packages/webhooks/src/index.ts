export * as SafeEgress from "./SafeEgress.js"
export * as UrlPolicy from "./UrlPolicy.js"
export * as WebhooksConfig from "./WebhooksConfig.js"
export * as WebhookSigner from "./WebhookSigner.js"
