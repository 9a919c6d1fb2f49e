/**
 * A trivial entity that tells which runner hosts it. `/ready` pings it to prove that a runner
 * answers through the cluster, and the topology test uses it to see entities on every runner.
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Effect, Schema } from "effect"

export const Ping = Rpc.make("Ping", {
  success: Schema.Struct({ runner: Schema.String, entity_id: Schema.String })
})

export const Probe = Entity.make("Probe", [Ping])

export const ProbeLive = Probe.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const runner = yield* Entity.CurrentRunnerAddress
    const name = `${runner.host}:${runner.port}`
    return Probe.of({
      Ping: () => Rpc.fork(Effect.succeed({ runner: name, entity_id: address.entityId }))
    })
  }),
  { maxIdleTime: "30 seconds" }
)
