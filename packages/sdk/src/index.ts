export * from "./verifyWebhook.js"
export * from "./WebhookEvent.js"
