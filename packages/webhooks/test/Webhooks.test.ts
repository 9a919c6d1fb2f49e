import { assert, describe, it } from "@effect/vitest"
import { Webhooks } from "@switchboard/domain"
import { SecretBox } from "@switchboard/infra"
import { verifyWebhook } from "@switchboard/sdk"
import { UrlPolicy, WebhookSigner } from "@switchboard/webhooks"
import { randomBytes } from "node:crypto"

describe("WebhookSigner", () => {
  it("signs timestamp.body with HMAC-SHA256 as lowercase hex (known vector)", () => {
    // echo -n '1700000000.{"a":1}' | openssl dgst -sha256 -hmac 'whsec_test'
    assert.strictEqual(
      WebhookSigner.signature("whsec_test", 1700000000, "{\"a\":1}"),
      "v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
    )
    assert.match(WebhookSigner.signature("whsec_test", 1700000000, "{\"a\":1}"), /^v1=[0-9a-f]{64}$/)
    assert.match(WebhookSigner.newSecret(), /^whsec_[A-Za-z0-9+/]{43}=$/)
  })

  it("puts one entry per secret, newest first", () => {
    const header = WebhookSigner.signatureHeader(["whsec_new", "whsec_old"], 1, "{}")
    const [first, second] = header.split(",")
    assert.strictEqual(first, WebhookSigner.signature("whsec_new", 1, "{}"))
    assert.strictEqual(second, WebhookSigner.signature("whsec_old", 1, "{}"))
  })
})

describe("UrlPolicy", () => {
  const refused = [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "255.255.255.255",
    "224.0.0.1",
    "192.0.2.10",
    "198.51.100.1",
    "203.0.113.5",
    "::1",
    "::",
    "fe80::1",
    "fd00:ec2::254",
    "fc00::1",
    "ff02::1",
    "2001:db8::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::7f00:1",
    "::a00:1",
    "::808:808"
  ]
  it("refuses every non-public address family and range", () => {
    for (const address of refused) assert.isFalse(UrlPolicy.isPublicAddress(address), address)
  })
  it("accepts public unicast addresses", () => {
    for (const address of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      assert.isTrue(UrlPolicy.isPublicAddress(address), address)
    }
  })
  it("checks scheme, credentials and port", () => {
    assert.strictEqual(UrlPolicy.checkUrl("ftp://example.com/x", false), "unsupported_scheme")
    assert.strictEqual(UrlPolicy.checkUrl("https://user:pw@example.com/x", false), "credentials_in_url")
    assert.strictEqual(UrlPolicy.checkUrl("https://example.com:8443/x", false), "port_not_allowed")
    assert.strictEqual(UrlPolicy.checkUrl("not a url", false), "invalid_url")
    assert.instanceOf(UrlPolicy.checkUrl("https://example.com:443/x", false), URL)
    assert.instanceOf(UrlPolicy.checkUrl("http://example.com:8443/x", true), URL)
  })
  it("refuses a URL whose literal address is private, at resolution", async () => {
    assert.strictEqual(await UrlPolicy.resolveTarget("http://127.0.0.1/hook", false), "private_address")
    assert.strictEqual(await UrlPolicy.resolveTarget("http://[::ffff:7f00:1]/hook", false), "private_address")
    assert.strictEqual(await UrlPolicy.resolveTarget("http://localhost/hook", false), "private_address")
    const allowed = await UrlPolicy.resolveTarget("http://127.0.0.1:9999/hook", true)
    assert.isObject(allowed)
  })
})

describe("retry schedule and outcomes", () => {
  it("draws equal jitter in [5*2^(n-1), 10*2^(n-1)] seconds, scaled", () => {
    const bounds = [[5, 10], [10, 20], [20, 40], [40, 80], [80, 160]]
    bounds.forEach(([low, high], i) => {
      assert.strictEqual(Webhooks.retryDelayMs(i + 1, 0, 1), low! * 1000)
      assert.strictEqual(Webhooks.retryDelayMs(i + 1, 0.999999, 1), Math.round(high! * 1000 - 0.001 * low!))
      assert.strictEqual(Webhooks.retryDelayMs(i + 1, 0, 0.01), low! * 10)
    })
  })
  it("maps statuses to the documented delivery outcomes", () => {
    assert.deepStrictEqual(Webhooks.outcomeOfStatus(204), { reason: "ok", retryable: false })
    assert.deepStrictEqual(Webhooks.outcomeOfStatus(302), { reason: "redirect", retryable: false })
    assert.deepStrictEqual(Webhooks.outcomeOfStatus(429), { reason: "rate_limited", retryable: true })
    assert.deepStrictEqual(Webhooks.outcomeOfStatus(404), { reason: "client_error", retryable: false })
    assert.deepStrictEqual(Webhooks.outcomeOfStatus(503), { reason: "server_error", retryable: true })
  })
})

describe("SecretBox", () => {
  it("round-trips and refuses tampering", () => {
    const key = randomBytes(32)
    const sealed = SecretBox.seal(key, "whsec_abc")
    assert.notInclude(sealed, "whsec_abc")
    assert.strictEqual(SecretBox.open(key, sealed), "whsec_abc")
    assert.throws(() => SecretBox.open(randomBytes(32), sealed))
  })
})

describe("verifyWebhook", () => {
  const body = JSON.stringify({
    id: "evt_1",
    type: "message.delivered",
    created_at: "2026-11-22T10:00:00.000Z",
    workspace_id: "ws_1",
    data: {
      object: "message",
      object_id: "msg_1",
      message_id: "msg_1",
      from_state: "sent",
      to_state: "delivered",
      category: "utility"
    }
  })
  const now = new Date("2026-11-22T10:00:00.000Z")
  const ts = Math.floor(now.getTime() / 1000)
  const headers = (signature: string, timestamp = ts) => ({
    "X-Webhook-Timestamp": String(timestamp),
    "X-Webhook-Signature": signature
  })

  it("accepts a good signature and types the event", () => {
    const result = verifyWebhook(body, headers(WebhookSigner.signature("whsec_a", ts, body)), "whsec_a", { now })
    assert.isTrue(result.valid)
    if (result.valid) assert.strictEqual(result.event.type, "message.delivered")
  })
  it("accepts any entry matching any secret (rotation)", () => {
    const header = WebhookSigner.signatureHeader(["whsec_new", "whsec_old"], ts, body)
    assert.isTrue(verifyWebhook(body, headers(header), ["whsec_old"], { now }).valid)
    assert.isTrue(verifyWebhook(body, headers(header), ["whsec_new"], { now }).valid)
  })
  it("ignores malformed v1 entries (trailing characters, other versions)", () => {
    const good = WebhookSigner.signature("whsec_a", ts, body)
    assert.deepStrictEqual(verifyWebhook(body, headers(`${good}zz`), "whsec_a", { now }), {
      valid: false,
      reason: "no_matching_signature"
    })
    assert.isFalse(verifyWebhook(body, headers(good.replace("v1=", "v0=")), "whsec_a", { now }).valid)
    assert.isTrue(verifyWebhook(body, headers(`v0=abc, ${good}`), "whsec_a", { now }).valid)
  })
  it("refuses a tampered body, a wrong secret and stale or future timestamps", () => {
    const good = WebhookSigner.signature("whsec_a", ts, body)
    assert.deepStrictEqual(verifyWebhook(body.replace("utility", "marketing"), headers(good), "whsec_a", { now }), {
      valid: false,
      reason: "no_matching_signature"
    })
    assert.isFalse(verifyWebhook(body, headers(good), "whsec_b", { now }).valid)
    const old = ts - 301
    assert.deepStrictEqual(
      verifyWebhook(body, headers(WebhookSigner.signature("whsec_a", old, body), old), "whsec_a", { now }),
      {
        valid: false,
        reason: "timestamp_out_of_tolerance"
      }
    )
    const future = ts + 301
    assert.isFalse(
      verifyWebhook(body, headers(WebhookSigner.signature("whsec_a", future, body), future), "whsec_a", { now }).valid
    )
    assert.deepStrictEqual(verifyWebhook(body, {}, "whsec_a", { now }), { valid: false, reason: "missing_headers" })
  })
})
