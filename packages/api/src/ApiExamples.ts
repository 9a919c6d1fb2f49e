/**
 * A request and a response example for the operations of the OpenAPI document (`examples` of
 * each parameter, request body and response, Api.ts `transform`), shown in docs/API.md
 * ("Examples", generated). They tell one story, in this order: a signed-in user with a test-mode
 * API key opens a sandbox session, verifies a recipient, sends, reads the timeline, works the inbox,
 * keeps contacts, groups and templates, registers a webhook endpoint, and links a number of its own
 * by QR code (a phone scans the code from the stream; the number's group chats appear).
 *
 * An id in an example (`ch_01JF0000000000000000000001`) stands for the first id of that kind the
 * story met, `..02` for the second; timestamps, secrets and codes are placeholders too. The
 * requests are written here; the responses (`examples/<group>.json`, gathered by
 * `ApiExampleResponses.ts`) are what a server answered to them, recorded by
 * test/apiExamples.test.ts (`WRITE_API_EXAMPLES=1`), which sends every example to a running server
 * and fails when an answer no longer matches its example.
 */

/** What a request example sends: path parameters, query parameters, a JSON body or a file's bytes. */
export interface RequestExample {
  readonly path?: Readonly<Record<string, string>>
  readonly query?: Readonly<Record<string, string>>
  readonly body?: unknown
  /** a body that is a file's bytes as they are, not JSON (`POST /v1/media`): its type and what it is */
  readonly file?: { readonly contentType: string; readonly shown: string }
}

/**
 * What a response example shows: its status and its JSON body (none for an empty answer), or the
 * text of a body that is not JSON (`text`: an event stream's frames, `qrPairing.stream`).
 */
export interface ResponseExample {
  readonly status: number
  readonly body?: unknown
  readonly text?: string
}

/** The example id of the `n`th id of kind `prefix` the story met: `ch_01JF0000000000000000000001`. */
export const exampleId = (prefix: string, n: number): string => `${prefix}_01JF${String(n).padStart(22, "0")}`

const ch = (n: number) => exampleId("ch", n)
const PHONE = "+4915112345678"
/** A CSV file of two contacts, base64 (`POST /v1/contacts/imports` takes the file so). */
const CSV_BASE64 = "cGhvbmVfbnVtYmVyLG5hbWUKKzQ5MTUxMTIzNDU2OTksR3JhY2UKMDE1MSAyMzQ1Njc4OCxMaW51cwo="
/** The QR code in examples: a real one is a fresh random text each time (test/apiExamples.test.ts shows every one as this). */
export const QR_CODE = "2@ExampleRef,ExampleNoiseKey=,ExampleIdentityKey=,ExampleAdvSecret="
/** A webhook receiver (test/apiExamples.test.ts runs one on this machine and shows its URL as this). */
export const WEBHOOK_URL = "https://hooks.example.com/switchboard"
/** The token of the e-mail that verifies a new account's address (the story reads it from the test mailbox). */
export const VERIFY_TOKEN = "x".repeat(43)
/** A session's tokens in examples (test/apiExamples.test.ts shows every real one as these). */
export const ACCESS_TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfMDFKRjAwMDAwMDAwMDAwMDAwMDAwMDAwMDEifQ.c2lnbmF0dXJl"
export const REFRESH_TOKEN = "rt_" + "x".repeat(43)

/** The requests, by operation id, in the story's order. */
export const REQUESTS: ReadonlyArray<readonly [operationId: string, request: RequestExample]> = [
  ["health.health", {}],
  ["health.ready", {}],
  ["auth.login", { body: { email: "ada@example.com", password: "correct horse battery staple" } }],
  ["auth.refresh", { body: { refresh_token: REFRESH_TOKEN } }],
  ["session.me", {}],
  ["session.members", { query: { limit: "20" } }],
  ["apiKeys.create", { body: { name: "CI key", mode: "test", scopes: ["messages.send", "messages.read"] } }],
  ["apiKeys.list", { query: { limit: "20" } }],
  ["plan.plan", {}],
  ["sandbox.create", {}],
  ["sandbox.verify", { path: { sessionId: exampleId("sbx", 1) }, body: { phone_number: PHONE, code: "123456" } }],
  ["sandbox.list", { query: { status: "active" } }],
  ["sandbox.get", { path: { sessionId: exampleId("sbx", 1) } }],
  ["channels.list", { query: { status: "connected" } }],
  ["channels.get", { path: { channelId: ch(1) } }],
  ["channels.capabilities", { path: { channelId: ch(1) } }],
  ["messages.send", { body: { to: PHONE, text: { body: "Your order #1042 has shipped." } } }],
  ["messages.get", { path: { messageId: exampleId("msg", 1) } }],
  ["messages.list", { query: { direction: "outbound", limit: "10" } }],
  ["media.upload", {
    query: { filename: "menu.png" },
    file: { contentType: "image/png", shown: "<the bytes of menu.png>" }
  }],
  ["media.get", { path: { mediaId: exampleId("med", 1) } }],
  ["media.content", { path: { mediaId: exampleId("med", 1) } }],
  ["sandbox.inbound", {
    path: { sessionId: exampleId("sbx", 1) },
    body: { from: PHONE, text: { body: "Thanks! When does it arrive?" } }
  }],
  ["conversations.list", { query: { status: "open" } }],
  ["conversations.get", { path: { conversationId: exampleId("cnv", 1) } }],
  ["conversations.messages", { path: { conversationId: exampleId("cnv", 1) }, query: { limit: "10" } }],
  ["conversations.markRead", { path: { conversationId: exampleId("cnv", 1) } }],
  ["messages.markRead", { path: { messageId: exampleId("msg", 2) } }],
  ["conversations.addNote", {
    path: { conversationId: exampleId("cnv", 1) },
    body: { body: "Asked about delivery: tracking link sent." }
  }],
  ["conversations.notes", { path: { conversationId: exampleId("cnv", 1) } }],
  ["conversations.update", { path: { conversationId: exampleId("cnv", 1) }, body: { status: "closed" } }],
  ["conversations.reply", {
    path: { conversationId: exampleId("cnv", 1) },
    body: { text: { body: "It arrives tomorrow before noon (this reply reopens the conversation)." } }
  }],
  ["plan.usage", {}],
  ["contacts.create", {
    body: { phone_number: "+4915112345679", name: "Ada Lovelace", tags: ["vip"], attributes: { city: "Berlin" } }
  }],
  ["contacts.get", { path: { contactId: exampleId("cnt", 2) } }],
  ["contacts.update", { path: { contactId: exampleId("cnt", 2) }, body: { tags: ["vip", "newsletter"] } }],
  ["contacts.list", { query: { tag: "vip" } }],
  ["contacts.tags", {}],
  ["contactGroups.create", { body: { name: "Berlin customers", description: "Ship from the Berlin store" } }],
  ["contactGroups.addMembers", {
    path: { groupId: exampleId("grp", 1) },
    body: { contact_ids: [exampleId("cnt", 2)] }
  }],
  ["contactGroups.get", { path: { groupId: exampleId("grp", 1) } }],
  ["contactGroups.list", {}],
  ["contactGroups.update", { path: { groupId: exampleId("grp", 1) }, body: { name: "Berlin VIPs" } }],
  ["contactGroups.removeMember", { path: { groupId: exampleId("grp", 1), contactId: exampleId("cnt", 2) } }],
  ["contactGroups.delete", { path: { groupId: exampleId("grp", 1) } }],
  ["contacts.delete", { path: { contactId: exampleId("cnt", 2) } }],
  ["templates.create", {
    body: {
      slug: "order_shipped",
      name: "Order shipped",
      body: "Hi {{name}}, your order {{order}} has shipped.",
      category: "utility",
      variables: [{ name: "name" }, { name: "order", example: "#1042" }]
    }
  }],
  ["templates.get", { path: { templateId: exampleId("tpl", 1) } }],
  ["templates.testSend", {
    path: { templateId: exampleId("tpl", 1) },
    body: { to: PHONE, variables: { name: "Ada", order: "#1042" } }
  }],
  ["templates.update", { path: { templateId: exampleId("tpl", 1) }, body: { name: "Order shipped (v2)" } }],
  ["templates.list", { query: { category: "utility" } }],
  ["templates.archive", { path: { templateId: exampleId("tpl", 1) } }],
  ["contactImports.create", {
    body: { file: CSV_BASE64, default_country: "DE", tags: ["imported"] }
  }],
  ["contactImports.get", { path: { importId: exampleId("imp", 1) } }],
  ["contactImports.list", { query: { limit: "10" } }],
  ["webhooks.eventTypes", { query: { limit: "3" } }],
  ["webhooks.list", {}],
  ["webhooks.deliveries", { query: { status: "failed" } }],
  ["webhooks.create", {
    body: { url: WEBHOOK_URL, event_types: ["message.received"], description: "Inbound messages" }
  }],
  ["webhooks.get", { path: { endpointId: exampleId("wh", 1) } }],
  ["webhooks.update", { path: { endpointId: exampleId("wh", 1) }, body: { description: "Inbound messages (CRM)" } }],
  ["webhooks.rotateSecret", { path: { endpointId: exampleId("wh", 1) } }],
  ["webhooks.test", { path: { endpointId: exampleId("wh", 1) } }],
  ["webhooks.delivery", { path: { deliveryId: exampleId("whd", 1) } }],
  ["webhooks.replay", { path: { deliveryId: exampleId("whd", 1) } }],
  ["webhooks.endpointDeliveries", { path: { endpointId: exampleId("wh", 1) }, query: { limit: "10" } }],
  ["webhooks.delete", { path: { endpointId: exampleId("wh", 1) } }],
  ["channels.create", { body: { provider: "qr", name: "Support line" } }],
  ["qrPairing.start", { path: { channelId: ch(2) }, body: { method: "qr" } }],
  ["qrPairing.status", { path: { channelId: ch(2) } }],
  ["qrPairing.stream", { path: { channelId: ch(2) } }],
  ["qrPairing.safety", { path: { channelId: ch(2) } }],
  ["groupChats.list", { path: { channelId: ch(2) }, query: { limit: "10" } }],
  ["groupChats.get", { path: { groupChatId: exampleId("gch", 1) } }],
  ["qrPairing.logout", { path: { channelId: ch(2) } }],
  ["sandbox.createGroupChat", {
    path: { sessionId: exampleId("sbx", 1) },
    body: { subject: "Order #1042", participants: [PHONE], description: "Delivery questions" }
  }],
  ["sandbox.removeFromGroupChat", { path: { sessionId: exampleId("sbx", 1), groupChatId: exampleId("gch", 2) } }],
  ["channels.update", { path: { channelId: ch(2) }, body: { name: "Support (Berlin)" } }],
  ["channels.archive", { path: { channelId: ch(2) } }],
  ["apiKeys.revoke", { path: { keyId: exampleId("key", 2) } }],
  ["sandbox.revoke", { path: { sessionId: exampleId("sbx", 1) } }],
  ["auth.register", {
    body: {
      email: "grace@example.com",
      password: "correct horse battery staple",
      name: "Grace",
      workspace_name: "Grace's Bakery"
    }
  }],
  ["auth.verifyEmail", { body: { token: VERIFY_TOKEN } }],
  ["session.logout", {}]
]
