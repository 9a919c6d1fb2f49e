import { assert, describe, it } from "@effect/vitest"
import { QrConnectionError } from "@switchboard/domain"
import { classifyConnectFailure, hostOf } from "../src/qr/QrConnectFailure.js"

const URL = "wss://web.whatsapp.com/ws/chat"
const options = { websocketUrl: URL, connectTimeoutMs: 20_000 }

/** A Node system error as `ws` reports it. */
const systemError = (code: string, message: string) => Object.assign(new Error(message), { code })
/** Baileys wraps the WebSocket's error in a Boom whose `data` is that error. */
const boom = (data: unknown, statusCode = 408) =>
  Object.assign(new Error(`WebSocket Error (${String((data as Error).message)})`), { data, output: { statusCode } })

const classify = (error: unknown) => classifyConnectFailure(error, options)

describe("QrConnectFailure", () => {
  it("classifies DNS failures (ENOTFOUND, EAI_AGAIN) as dns_failed", () => {
    for (const code of ["ENOTFOUND", "EAI_AGAIN"]) {
      const failure = classify(boom(systemError(code, `getaddrinfo ${code} web.whatsapp.com`)))
      assert.strictEqual(failure.reason, "dns_failed")
      assert.strictEqual(
        failure.message,
        `Could not look up web.whatsapp.com in DNS (${code}). Check the server's DNS settings and internet access.`
      )
    }
  })

  it("classifies a refused connection, an unreachable network and a timeout", () => {
    assert.strictEqual(
      classify(boom(systemError("ECONNREFUSED", "connect ECONNREFUSED 10.1.2.3:443"))).reason,
      "connection_refused"
    )
    assert.strictEqual(
      classify(boom(systemError("ENETUNREACH", "connect ENETUNREACH 10.1.2.3:443"))).reason,
      "network_unreachable"
    )
    assert.strictEqual(
      classify(boom(systemError("EHOSTUNREACH", "connect EHOSTUNREACH"))).reason,
      "network_unreachable"
    )
    assert.strictEqual(classify(boom(systemError("ETIMEDOUT", "connect ETIMEDOUT 10.1.2.3:443"))).reason, "timeout")
    // ws's own handshake timeout has no code
    const handshake = classify(boom(new Error("Opening handshake has timed out")))
    assert.strictEqual(handshake.reason, "timeout")
    assert.include(handshake.message, "(no answer within 20 s)")
  })

  it("classifies certificate and TLS handshake failures as tls_failed", () => {
    for (
      const error of [
        systemError("DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate"),
        systemError("CERT_HAS_EXPIRED", "certificate has expired"),
        systemError("ERR_TLS_CERT_ALTNAME_INVALID", "Hostname/IP does not match certificate's altnames: IP: 10.1.2.3"),
        systemError("UNABLE_TO_VERIFY_LEAF_SIGNATURE", "unable to verify the first certificate"),
        systemError("EPROTO", "write EPROTO ... wrong version number"),
        systemError("ECONNRESET", "Client network socket disconnected before secure TLS connection was established")
      ]
    ) assert.strictEqual(classify(boom(error, 500)).reason, "tls_failed", error.message)
  })

  it("classifies a WebSocket closed before it opened: an HTTP answer, a reset, a bare close", () => {
    const http = classify(boom(new Error("Unexpected server response: 502"), 502))
    assert.strictEqual(http.reason, "connection_closed")
    assert.include(http.message, "(HTTP 502)")
    assert.strictEqual(classify(boom(systemError("ECONNRESET", "socket hang up"))).reason, "connection_closed")
    // Baileys' own close (428) without an underlying error
    assert.strictEqual(
      classify(Object.assign(new Error("Connection Terminated"), { output: { statusCode: 428 } })).reason,
      "connection_closed"
    )
    assert.strictEqual(classify(undefined).reason, "connection_closed")
    assert.strictEqual(classify(boom(systemError("EMFILE", "too many open files"))).reason, "connection_failed")
  })

  it("reads the code of an AggregateError (several addresses tried)", () => {
    const aggregate = Object.assign(new AggregateError([systemError("ECONNREFUSED", "connect ECONNREFUSED ::1:443")]), {
      message: ""
    })
    assert.strictEqual(classify(boom(aggregate)).reason, "connection_refused")
  })

  it("names only the configured host and a code: never resolved addresses, Node's text or a stack", () => {
    const cause = systemError("ECONNREFUSED", "connect ECONNREFUSED 10.1.2.3:443")
    const failure = classifyConnectFailure(boom(cause), {
      websocketUrl: "wss://user:secret@wa.example.test:8443/ws/chat?token=abc",
      connectTimeoutMs: 20_000
    })
    assert.strictEqual(
      failure.message,
      "wa.example.test:8443 refused the connection (ECONNREFUSED). Check the WhatsApp address the server is configured with, and any firewall or proxy on the way."
    )
    for (const leak of ["10.1.2.3", "secret", "user", "token", "abc", "at ", "Error"]) {
      assert.notInclude(failure.message, leak)
    }
  })

  it("keeps to the documented reasons, each message ending with what to check", () => {
    const errors = [
      systemError("ENOTFOUND", ""),
      systemError("ECONNREFUSED", ""),
      systemError("ENETUNREACH", ""),
      systemError("ETIMEDOUT", ""),
      systemError("CERT_HAS_EXPIRED", ""),
      systemError("ECONNRESET", ""),
      systemError("EMFILE", "")
    ]
    const reasons = errors.map((e) => classify(boom(e)).reason)
    assert.deepStrictEqual(reasons, [...QrConnectionError.QR_CONNECTION_ERROR_REASONS])
    for (const e of errors) assert.match(classify(boom(e)).message, /\. Check .+\.$/)
  })

  it("takes the host from the URL, and falls back when it cannot be read", () => {
    assert.strictEqual(hostOf(URL), "web.whatsapp.com")
    assert.strictEqual(hostOf("ws://127.0.0.1:36017/ws/chat"), "127.0.0.1:36017")
    assert.strictEqual(hostOf("not a url"), "WhatsApp")
  })
})
