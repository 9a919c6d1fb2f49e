/** The part of autocannon 9 the benchmarks use (it ships no types). */
declare module "autocannon" {
  export interface Request {
    readonly method?: string
    readonly path?: string
    readonly headers?: Record<string, string>
    readonly body?: string
    /** called before every request of a connection; returns the request to send */
    readonly setupRequest?: (request: Request & { headers: Record<string, string> }, context: object) => Request
  }

  export interface Options {
    readonly url: string
    readonly connections?: number
    /** seconds */
    readonly duration?: number
    /** requests per second over all connections */
    readonly overallRate?: number
    readonly method?: string
    readonly headers?: Record<string, string>
    readonly body?: string
    readonly requests?: ReadonlyArray<Request>
    /** ms */
    readonly timeout?: number
  }

  export interface Histogram {
    readonly average: number
    readonly mean: number
    readonly stddev: number
    readonly min: number
    readonly max: number
    readonly total: number
    readonly p50: number
    readonly p90: number
    readonly p97_5: number
    readonly p99: number
  }

  export interface Result {
    /** seconds */
    readonly duration: number
    readonly errors: number
    readonly timeouts: number
    readonly non2xx: number
    readonly "2xx": number
    readonly statusCodeStats: Record<string, { count: number }>
    /** ms */
    readonly latency: Histogram
    readonly requests: Histogram & { readonly sent: number }
  }

  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
