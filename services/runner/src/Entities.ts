/** Every entity a runner hosts; the runner and standalone processes compose this layer. */
import { ProbeLive } from "@switchboard/entities"
import { Layer } from "effect"

export const layer = Layer.mergeAll(ProbeLive)
