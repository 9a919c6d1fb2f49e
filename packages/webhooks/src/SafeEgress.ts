/**
 * One webhook attempt: POST to the address that was checked (no second DNS lookup), never follow
 * redirects, 10 s in all, read at most 64 KiB (and 1 s) of the answer's body. Returns the SPEC 6.4
 * outcome, decided by the status once it arrived.
 */
import { ATTEMPT_TIMEOUT_MS, outcomeOfStatus } from "@switchboard/domain"
import type { FailureReason } from "@switchboard/domain"
import { Agent, type Dispatcher, request } from "undici"
import type { Target } from "./UrlPolicy.js"

export interface AttemptOutcome {
  readonly reason: FailureReason
  readonly retryable: boolean
  readonly status: number | null
  readonly latencyMs: number | null
}

const MAX_RESPONSE_BYTES = 64 * 1024
/** How long the answer's body is read once the status is known. */
const BODY_GRACE_MS = 1_000

/** Reads at most 64 KiB of the body for at most 1 s, then drops the rest; never fails. */
const drain = async (body: Dispatcher.ResponseData["body"]) => {
  const timer = setTimeout(() => body.destroy(), BODY_GRACE_MS)
  try {
    let read = 0
    for await (const chunk of body) {
      read += (chunk as Buffer).length
      if (read >= MAX_RESPONSE_BYTES) break
    }
  } catch {
    // cut off (grace over, attempt timeout) or broken: the status already decided
  } finally {
    clearTimeout(timer)
    body.destroy()
  }
}

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
    // the status decides the outcome: the receiver has answered (latency ends here), and a body
    // that is slow, endless or broken must not turn a 2xx into a retried timeout (a duplicate)
    const latencyMs = Math.round(performance.now() - started)
    const outcome = outcomeOfStatus(response.statusCode)
    await drain(response.body)
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
