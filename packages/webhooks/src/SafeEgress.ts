/**
 * One webhook attempt: POST to the address that was checked (no second DNS lookup), never follow
 * redirects, 10 s in all, read at most 64 KiB (and 1 s) of the answer's body. Returns the documented (docs/WEBHOOKS.md "Webhooks")
 * outcome, decided by the status once it arrived.
 *
 * An agent is pinned to one checked address; `PinnedAgents` keeps the current one of an endpoint
 * so its connections are reused (keep-alive) for as long as the check gives the same address.
 */
import { Webhooks } from "@switchboard/domain"
import { Agent, type Dispatcher, request } from "undici"
import type { Target } from "./UrlPolicy.js"

export interface AttemptOutcome {
  readonly reason: Webhooks.FailureReason
  readonly retryable: boolean
  readonly status: number | null
  readonly latencyMs: number | null
}

const MAX_RESPONSE_BYTES = 64 * 1024
/** How long the answer's body is read once the status is known. */
const BODY_GRACE_MS = 1_000

/**
 * Reads at most 64 KiB of the body for at most 1 s, then drops the rest; never fails. A body read
 * to its end leaves the connection open for the endpoint's next attempt; one cut off closes it.
 */
const drain = async (body: Dispatcher.ResponseData["body"]) => {
  const timer = setTimeout(() => body.destroy(), BODY_GRACE_MS)
  let ended = false
  try {
    let read = 0
    for await (const chunk of body) {
      read += (chunk as Buffer).length
      if (read >= MAX_RESPONSE_BYTES) break
    }
    ended = read < MAX_RESPONSE_BYTES
  } catch {
    // cut off (grace over, attempt timeout) or broken: the status already decided
  } finally {
    clearTimeout(timer)
    if (!ended) body.destroy()
  }
}

/** An agent that connects only to `target.address`, whatever the URL's host resolves to now. */
export const pinnedAgent = (target: Target): Agent =>
  new Agent({
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
    headersTimeout: Webhooks.ATTEMPT_TIMEOUT_MS,
    bodyTimeout: Webhooks.ATTEMPT_TIMEOUT_MS,
    connectTimeout: Webhooks.ATTEMPT_TIMEOUT_MS
  })

/**
 * The pinned agent of one endpoint: reused while the checked target has the same origin and
 * address, replaced (the old one closes once its requests are done) when either changes.
 */
export class PinnedAgents {
  private current: { readonly key: string; readonly agent: Agent } | undefined

  for(target: Target): Agent {
    const key = `${target.url.origin} ${target.address}`
    if (this.current?.key === key) return this.current.agent
    this.current?.agent.close().catch(() => {})
    const agent = pinnedAgent(target)
    this.current = { key, agent }
    return agent
  }

  close(): Promise<void> {
    const agent = this.current?.agent
    this.current = undefined
    return agent ? agent.close().catch(() => {}) : Promise.resolve()
  }
}

/** `agent`: a pinned agent of this target to reuse (`PinnedAgents`); without it, one for this attempt only. */
export const post = async (
  target: Target,
  headers: Record<string, string>,
  body: string,
  agent?: Agent
): Promise<AttemptOutcome> => {
  const dispatcher = agent ?? pinnedAgent(target)
  const started = performance.now()
  try {
    const response = await request(target.url, {
      method: "POST",
      dispatcher,
      headers: { "content-type": "application/json", "user-agent": "Switchboard-Webhooks/1.0", ...headers },
      body,
      signal: AbortSignal.timeout(Webhooks.ATTEMPT_TIMEOUT_MS)
    })
    // the status decides the outcome: the receiver has answered (latency ends here), and a body
    // that is slow, endless or broken must not turn a 2xx into a retried timeout (a duplicate)
    const latencyMs = Math.round(performance.now() - started)
    const outcome = Webhooks.outcomeOfStatus(response.statusCode)
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
    if (agent === undefined) dispatcher.close().catch(() => {})
  }
}
