/**
 * Invalidations over real Redis: a process that publishes right after it started (the admin CLI
 * suspending a workspace) reaches the other processes' listeners, although its client is still
 * connecting (it queues nothing while it does).
 */
import { assert, describe, it } from "@effect/vitest"
import { Invalidations, Redis } from "@switchboard/infra"
import { testRedisUrl } from "@switchboard/infra/testing"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"

const url = testRedisUrl()

describe.skipIf(url === undefined)("Invalidations (real Redis)", () => {
  it.live(
    "a message published by a client that is still connecting reaches another process's listener",
    () =>
      Effect.gen(function*() {
        const config = Redis.configLayer({
          url: Option.some(Redacted.make(url!)),
          keyPrefix: `sbt_${process.pid}_${randomBytes(4).toString("hex")}:`
        })
        // two processes: each its own client and subscriber
        const node = () => Invalidations.layer.pipe(Layer.provide(Redis.clientLayer), Layer.provide(config))
        const heard: Array<string> = []
        const listener = Context.get(yield* Layer.build(node()), Invalidations.Invalidations)
        yield* listener.listen({ message: (topic) => void heard.push(topic), reset: () => {} })
        // the subscriber is live once it has subscribed
        for (let i = 0; i < 100 && !listener.live(); i++) yield* Effect.sleep("20 millis")
        assert.isTrue(listener.live(), "the listener subscribed")

        // a fresh process publishes at once: its client has not connected yet
        const publisher = Context.get(yield* Layer.build(node()), Invalidations.Invalidations)
        yield* publisher.publish("workspace:ws_fresh")
        for (let i = 0; i < 100 && heard.length === 0; i++) yield* Effect.sleep("20 millis")
        assert.deepStrictEqual(heard, ["workspace:ws_fresh"])
      }).pipe(Effect.scoped),
    20_000
  )
})
