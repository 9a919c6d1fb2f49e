/** Words the console shows (docs/CONSOLE.md "Console"): pure functions, no DOM, so that tests import this module as it is. */

/** `n` things, plural-aware: count(1, "failure") is "1 failure", count(2, "failure") "2 failures". */
export const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** An endpoint's failing streak: "1 failure in a row". */
export const failuresInARow = (n: number) => `${count(n, "failure")} in a row`

/** A delivery's event as a person reads it: a test delivery (`POST /v1/webhook-endpoints/{id}/test`) named as such. */
export const deliveryEvent = (d: { readonly is_test: boolean; readonly event_type: string }) =>
  d.is_test ? `Test event (${d.event_type})` : d.event_type
