/**
 * The name of every operation (OpenAPI `summary`: what Swagger lists), the description of each
 * group (OpenAPI tags), and descriptions for the few operations whose name says it all. Kept in one
 * place so a missing one is obvious: test/openapi.test.ts lints the document (Redocly's
 * `recommended` rules) and fails on an operation without a summary or a description.
 */
export const SUMMARIES: Record<string, string> = {
  "health.health": "Liveness",
  "health.ready": "Readiness",
  "auth.register": "Register a user and a workspace",
  "auth.verifyEmail": "Verify an e-mail address",
  "auth.login": "Log in",
  "auth.refresh": "Refresh the access token",
  "session.logout": "Log out",
  "session.me": "The signed-in user and their workspaces",
  "apiKeys.list": "List API keys",
  "apiKeys.create": "Create an API key",
  "apiKeys.revoke": "Revoke an API key",
  "plan.plan": "The workspace's plan and entitlements",
  "plan.usage": "The workspace's usage this month",
  "messages.send": "Send a message",
  "messages.list": "List messages",
  "messages.get": "Get a message and its timeline",
  "media.get": "Get a stored media's metadata",
  "media.content": "Download a stored media's bytes",
  "conversations.list": "List conversations",
  "conversations.get": "Get a conversation",
  "conversations.update": "Assign, close or reopen a conversation",
  "conversations.markRead": "Mark a conversation read",
  "conversations.messages": "List a conversation's messages",
  "conversations.reply": "Reply in a conversation",
  "conversations.addNote": "Add an internal note",
  "conversations.notes": "List a conversation's notes",
  "channels.list": "List channels",
  "channels.create": "Create a channel",
  "channels.get": "Get a channel",
  "channels.update": "Rename a channel or make it the default",
  "channels.archive": "Archive a channel",
  "channels.capabilities": "A channel's capabilities",
  "qrPairing.start": "Start QR pairing",
  "qrPairing.status": "QR pairing status",
  "qrPairing.safety": "A QR channel's use of its 24 h safety cap",
  "qrPairing.stream": "Stream QR codes and pairing events (SSE)",
  "qrPairing.logout": "Unlink a QR channel's phone",
  "sandbox.create": "Open a sandbox session",
  "sandbox.get": "Get a sandbox session",
  "sandbox.revoke": "End a sandbox session",
  "sandbox.verify": "Verify a recipient for a sandbox session",
  "sandbox.inbound": "Simulate an inbound sandbox message",
  "contactImports.create": "Import contacts from CSV",
  "contactImports.list": "List contact imports",
  "contactImports.get": "Get a contact import",
  "contacts.create": "Create a contact",
  "contacts.list": "List or search contacts",
  "contacts.tags": "List the tags in use",
  "contacts.get": "Get a contact",
  "contacts.update": "Update a contact",
  "contacts.delete": "Delete a contact",
  "contactGroups.create": "Create a contact group",
  "contactGroups.list": "List contact groups",
  "contactGroups.get": "Get a contact group",
  "contactGroups.update": "Rename or describe a contact group",
  "contactGroups.delete": "Delete a contact group",
  "contactGroups.addMembers": "Add contacts to a group",
  "contactGroups.removeMember": "Remove a contact from a group",
  "templates.create": "Create a template",
  "templates.list": "List templates",
  "templates.get": "Get a template",
  "templates.update": "Update a template",
  "templates.archive": "Archive a template",
  "templates.testSend": "Send a template to a test recipient",
  "webhooks.eventTypes": "List the webhook event types",
  "webhooks.create": "Create a webhook endpoint",
  "webhooks.list": "List webhook endpoints",
  "webhooks.get": "Get a webhook endpoint",
  "webhooks.update": "Update, pause or re-enable a webhook endpoint",
  "webhooks.delete": "Delete a webhook endpoint",
  "webhooks.rotateSecret": "Rotate a webhook endpoint's secret",
  "webhooks.test": "Send a test event to a webhook endpoint",
  "webhooks.endpointDeliveries": "List a webhook endpoint's deliveries",
  "webhooks.deliveries": "List webhook deliveries",
  "webhooks.delivery": "Get a webhook delivery and its attempts",
  "webhooks.replay": "Replay a webhook delivery"
}

/** Descriptions of operations that had none of their own. */
export const DESCRIPTIONS: Record<string, string> = {
  "channels.list": "The workspace's channels, newest first, filtered by `status` if given.",
  "channels.get": "One channel with its status, provider, phone number and whether it is the default.",
  "sandbox.get":
    "The session with its status (`expired` as soon as its time is up), channel, shared `phone_number` and `verified_recipients`. Test-mode API keys only.",
  "contactGroups.get": "One group with its `member_count`.",
  "contactGroups.update":
    "Changes the name or the description (names are unique in a workspace: 409 CONFLICT otherwise).",
  "templates.get": "One template with its body, variables, category and status.",
  "webhooks.list": "The workspace's webhook endpoints (never their secrets), newest first.",
  "webhooks.get": "One endpoint with its event types, status and `consecutive_failures` (never its secret).",
  "webhooks.endpointDeliveries":
    "This endpoint's deliveries, newest first, filtered by `status` if given; each with its event, `attempt_count` and last `response_status`.",
  "webhooks.deliveries": "Every endpoint's deliveries, newest first, filtered by `status` if given.",
  "webhooks.delivery":
    "One delivery with every attempt (`at`, `response_status`, `failure_reason`, `latency_ms`); never the receiver's response body."
}

/** OpenAPI tag (group) descriptions. */
export const TAGS: Record<string, string> = {
  Health: "Probes for load balancers and orchestrators: no credential.",
  Auth: "Registration, e-mail verification, login and token refresh: no credential (rate limited per IP).",
  Session: "The signed-in user: a user access token only.",
  "API keys": "Keys for programs: `wa_test_...` (sandbox) and `wa_live_...`, with scopes. The secret is shown once.",
  "Plan and usage": "What the workspace's plan allows and what it used this month.",
  Messages: "Send messages (accepted at once, queued durably) and follow them through their timeline.",
  Media:
    "Files of inbound messages (images, voice notes, documents, ...), stored before `message.received` and kept `MEDIA_RETENTION_DAYS`.",
  Conversations: "One thread per contact and channel: inbox, assignment, replies within the reply window, notes.",
  Channels: "Where messages go out: the shared sandbox number or your own number linked by QR.",
  "QR pairing": "Link your own WhatsApp number by scanning a QR code: a signed-in user only.",
  Sandbox: "A shared test number for 72 hours, for trying the API: test-mode API keys only.",
  "Contact imports": "Bulk contact imports from CSV, processed in the background with per-row errors.",
  Contacts: "The address book: contacts with attributes and tags, searchable.",
  "Contact groups": "Named groups of contacts.",
  Templates: "Reusable message bodies with variables.",
  Webhooks: "Endpoints that receive signed events, their deliveries and replays (README \"Webhooks\")."
}
