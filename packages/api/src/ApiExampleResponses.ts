/**
 * The response examples of `ApiExamples.REQUESTS`, by operation id: what a server answered,
 * recorded by test/apiExamples.test.ts (`WRITE_API_EXAMPLES=1`), which writes this module and
 * `examples/<group>.json`, one per API group. Do not edit them by hand: the test fails when a
 * server's answer no longer matches.
 */
import type { ResponseExample } from "./ApiExamples.js"
import apiKeys from "./examples/apiKeys.json" with { type: "json" }
import auth from "./examples/auth.json" with { type: "json" }
import channels from "./examples/channels.json" with { type: "json" }
import contactGroups from "./examples/contactGroups.json" with { type: "json" }
import contactImports from "./examples/contactImports.json" with { type: "json" }
import contacts from "./examples/contacts.json" with { type: "json" }
import conversations from "./examples/conversations.json" with { type: "json" }
import groupChats from "./examples/groupChats.json" with { type: "json" }
import health from "./examples/health.json" with { type: "json" }
import media from "./examples/media.json" with { type: "json" }
import messages from "./examples/messages.json" with { type: "json" }
import plan from "./examples/plan.json" with { type: "json" }
import qrPairing from "./examples/qrPairing.json" with { type: "json" }
import sandbox from "./examples/sandbox.json" with { type: "json" }
import session from "./examples/session.json" with { type: "json" }
import templates from "./examples/templates.json" with { type: "json" }
import webhooks from "./examples/webhooks.json" with { type: "json" }

export const RESPONSES: Readonly<Record<string, ResponseExample>> = {
  ...apiKeys,
  ...auth,
  ...channels,
  ...contactGroups,
  ...contactImports,
  ...contacts,
  ...conversations,
  ...groupChats,
  ...health,
  ...media,
  ...messages,
  ...plan,
  ...qrPairing,
  ...sandbox,
  ...session,
  ...templates,
  ...webhooks
}
