/**
 * The send load of bench/send.ts for the spike's harness: autocannon `POST /v1/messages` with a
 * distinct Idempotency-Key per request, round robin over `channels`, and the CPU of every
 * `postgres` process.
 */
import autocannon from "autocannon"
import type { Result } from "autocannon"
import { readdirSync, readFileSync } from "node:fs"
import { cpuSeconds } from "../../lib/Measure.js"
import { RECIPIENT } from "../../lib/Stack.js"

/** CPU seconds of every process named `postgres` (the server and its backends) so far. */
export const postgresCpu = () => {
  let total = 0
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() === "postgres") total += cpuSeconds(Number(entry))
    } catch {
      // exited meanwhile
    }
  }
  return total
}

let counter = 0

export const loadSend = (
  baseUrl: string,
  apiKey: string | undefined,
  channels: ReadonlyArray<string>,
  options: { duration: number; connections: number; overallRate?: number }
): Promise<Result> => {
  const tag = `${process.pid}-${Date.now().toString(36)}`
  return autocannon({
    url: baseUrl,
    connections: options.connections,
    duration: options.duration,
    timeout: 30,
    ...(options.overallRate ? { overallRate: options.overallRate } : {}),
    requests: [{
      method: "POST",
      path: "/v1/messages",
      setupRequest: (request) => {
        const n = counter++
        return {
          ...request,
          headers: {
            ...request.headers,
            "content-type": "application/json",
            "idempotency-key": `spike-${tag}-${n}`,
            ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {})
          },
          body: JSON.stringify({
            to: RECIPIENT,
            channel_id: channels[n % channels.length],
            text: { body: `bench ${n}` }
          })
        }
      }
    }]
  })
}
