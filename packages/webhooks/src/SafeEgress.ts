/**
 * One webhook attempt: POST to the address that was checked (no second DNS lookup), never follow
 * redirects, 10 s in all, read at most 64 KiB of the answer. Returns the SPEC 6.4 outcome.
 */
import { ATTEMPT_TIMEOUT_MS, outcomeOfStatus } from "@switchboard/domain"
import type { FailureReason } from "@switchboard/domain"
import { Agent, request } from "undici"
import type { Target } from "./UrlPolicy.js"

export interface AttemptOutcome {
  readonly reason: FailureReason
  readonly retryable: boolean
  readonly status: number | null
  readonly latencyMs: number | null
}

const MAX_RESPONSE_BYTES = 64 * 1024

export const post = async (target: Target, headers: Record<string, string>, body: string): Promise<AttemptOutcome> => {
  const agent = new Agent({
    connect: {
      // pin the checked address; TLS still verifies the URL's host name (SNI from the URL).
      // Node asks for `all` addresses only while family auto-selection is on (its default since
      // 20, switchable off per process): answer both forms or every attempt is a network_error.
      lookup: (_hostname, options, callback) =>
        options.all
          ? callback(null, [{ address: target.address, family: target.family }])
          : (callback as unknown as (error: null, address: string, family: number) => void)(
            null,
            target.address,
            target.family
          )
    },
    headersTimeout: ATTEMPT_TIMEOUT_MS,
    bodyTimeout: ATTEMPT_TIMEOUT_MS,
    connectTimeout: ATTEMPT_TIMEOUT_MS
  })
  const started = performance.now()
  try {
    const response = await request(target.url, {
      method: "POST",
      dispatcher: agent,
      headers: { "content-type": "application/json", "user-agent": "Switchboard-Webhooks/1.0", ...headers },
      body,
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)
    })
    let read = 0
    for await (const chunk of response.body) {
      read += (chunk as Buffer).length
      if (read >= MAX_RESPONSE_BYTES) break
    }
    response.body.destroy()
    const latencyMs = Math.round(performance.now() - started)
    const outcome = outcomeOfStatus(response.statusCode)
    return { ...outcome, status: response.statusCode, latencyMs }
  } catch (error) {
    const name = error as { name?: string; code?: string }
    const timedOut = name.name === "TimeoutError" || name.name === "AbortError" ||
      name.code === "UND_ERR_HEADERS_TIMEOUT" ||
      name.code === "UND_ERR_BODY_TIMEOUT" || name.code === "UND_ERR_CONNECT_TIMEOUT"
    return {
      reason: timedOut ? "timeout" : "network_error",
      retryable: true,
      status: null,
      latencyMs: Math.round(performance.now() - started)
    }
  } finally {
    agent.close().catch(() => {})
  }
}
