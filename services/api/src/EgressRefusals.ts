/**
 * What a person reads when a URL the server would fetch from (a webhook endpoint, a media URL) is
 * refused by the egress policy (`UrlPolicy`, docs/API.md "Media"): one sentence per refusal, with
 * what to do, the development flag named where it applies.
 */
import type { UrlPolicy } from "@switchboard/webhooks"

export const REFUSAL_WORDS: Record<UrlPolicy.Refusal, string> = {
  invalid_url: "Expected an absolute URL",
  unsupported_scheme: "Expected an http or https URL",
  credentials_in_url: "The URL must not carry credentials",
  port_not_allowed:
    "Only ports 80 and 443 are allowed (in development, WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows any port)",
  unresolvable_host: "The host name does not resolve",
  private_address:
    "The host resolves to a private, loopback, link-local or otherwise non-public address (to reach your own machine in development, start the server with WEBHOOK_ALLOW_PRIVATE_TARGETS=true)"
}
