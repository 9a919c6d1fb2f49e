/**
 * The send load of `bench:send` and `bench:footprint`: autocannon POSTing `/v1/messages` (a text to
 * the bench's recipient, each with an Idempotency-Key of its own) round-robin over `channels`.
 */
import autocannon from "autocannon"
import type { Result } from "autocannon"
import { RECIPIENT } from "./Stack.js"

let counter = 0
export const load = (
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
            "idempotency-key": `bench-${tag}-${n}`,
            ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {})
          },
          body: JSON.stringify({
            to: RECIPIENT,
            channel_id: channels[n % channels.length],
            text: { body: `bench message ${n}` }
          })
        }
      }
    }]
  })
}
