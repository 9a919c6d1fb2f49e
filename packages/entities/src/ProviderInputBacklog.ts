/**
 * Provider input a runner has taken and not recorded yet (docs/OPERATING.md "Provider input during
 * a database outage"): each channel's connection (`ChannelConnection`) counts here every message,
 * receipt, LID mapping, status change, restriction and recipient-check answer from the moment it
 * takes it until Postgres has it. From the counts come two gauges, one log line a minute while
 * anything waits, and the runner's readiness (`oldestAge` against `readyMaxAge`).
 *
 * Its settings are read from the environment with defaults, in the `Config` below.
 */
import { Clock, Config, Context, Duration, Effect, Layer, Metric, Schedule, type Scope } from "effect"
import { join } from "node:path"
import * as ProviderInputSpool from "./ProviderInputSpool.js"

export class ProviderInputConfig extends Context.Tag("@switchboard/entities/ProviderInputConfig")<
  ProviderInputConfig,
  {
    /**
     * items one channel may hold unrecorded; at this many the channel stops reading from its
     * provider (the link is held) until half of them are recorded
     */
    readonly maxWaiting: number
    /** the runner reports itself degraded (`/ready`) once an item has waited longer than this */
    readonly readyMaxAge: Duration.Duration
    /** at shutdown, how long a channel waits for its unrecorded items before its link closes */
    readonly drainTimeout: Duration.Duration
    /**
     * where a channel keeps what waits for the database (`ProviderInputSpool`), so a runner killed
     * meanwhile records it at its next start; `undefined`: in memory only
     */
    readonly spoolDir?: string | undefined
  }
>() {}

export const defaults: Context.Tag.Service<ProviderInputConfig> = {
  maxWaiting: 1_000,
  readyMaxAge: Duration.seconds(30),
  drainTimeout: Duration.seconds(20)
}

export const config: Config.Config<Context.Tag.Service<ProviderInputConfig>> = Config.all({
  maxWaiting: Config.integer("PROVIDER_INPUT_MAX_WAITING").pipe(
    Config.withDefault(defaults.maxWaiting),
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
    Config.withDescription("Unrecorded provider input one channel may hold before it stops reading from its provider")
  ),
  readyMaxAge: Config.duration("PROVIDER_INPUT_READY_MAX_AGE").pipe(
    Config.withDefault(defaults.readyMaxAge),
    Config.withDescription("The runner is not ready while provider input waited longer than this")
  ),
  drainTimeout: Config.duration("PROVIDER_INPUT_DRAIN_TIMEOUT").pipe(
    Config.withDefault(defaults.drainTimeout),
    Config.withDescription("At shutdown, how long a channel waits for its unrecorded input before closing its link")
  ),
  spoolDir: Config.string("PROVIDER_INPUT_SPOOL_DIR").pipe(
    Config.orElse(() =>
      Config.map(Config.string("DATA_DIR").pipe(Config.withDefault("./data")), (d) => join(d, "provider-input"))
    ),
    Config.withDescription(
      "Where a runner keeps provider input that waits for the database (default <DATA_DIR>/provider-input)"
    )
  )
})

export const configLayer = (options: Partial<Context.Tag.Service<ProviderInputConfig>> = {}) =>
  Layer.succeed(ProviderInputConfig, { ...defaults, ...options })

export const configLayerFromEnv = Layer.effect(ProviderInputConfig, config)

export const waitingGauge = Metric.gauge("switchboard_provider_input_waiting", {
  description: "Provider input (inbound messages, receipts, status changes, ...) taken and not yet recorded"
})

export const oldestGauge = Metric.gauge("switchboard_provider_input_oldest_seconds", {
  description: "Age of the oldest provider input not yet recorded (0 when none waits)"
})

/** One channel's unrecorded items: each from `add` to its `done`, in the order taken. */
export interface ChannelInput {
  /** an item taken now; call `done` with the answer once it is recorded (or given up as a bug) */
  readonly add: (now: number) => number
  readonly done: (ticket: number) => void
  readonly waiting: () => number
  /** when the oldest unrecorded item was taken (epoch ms), if any */
  readonly oldestAt: () => number | undefined
}

export interface Snapshot {
  readonly waiting: number
  /** 0 when nothing waits */
  readonly oldestAgeMs: number
  /** channels holding anything */
  readonly channels: number
}

export class ProviderInputBacklog extends Context.Tag("@switchboard/entities/ProviderInputBacklog")<
  ProviderInputBacklog,
  {
    readonly config: Context.Tag.Service<ProviderInputConfig>
    /** A channel's counter, counted until the scope closes. */
    readonly track: Effect.Effect<ChannelInput, never, Scope.Scope>
    /**
     * `track`, and `waiting` runs at each sample (every second) while the channel holds anything,
     * with the age of its oldest item (ms): how a channel learns that what it holds is waiting
     * (`ChannelConnection` spools it then).
     */
    readonly trackWith: (waiting: (oldestAgeMs: number) => Effect.Effect<void>) => Effect.Effect<
      ChannelInput,
      never,
      Scope.Scope
    >
    readonly snapshot: Effect.Effect<Snapshot>
    /** Why the runner is not ready, when an item waited longer than `readyMaxAge`. */
    readonly degraded: Effect.Effect<string | undefined>
  }
>() {}

/** The counter of one channel: tickets in a Map, whose first entry is the oldest. */
export const makeChannelInput = (): ChannelInput => {
  const open = new Map<number, number>()
  let next = 0
  return {
    add(now) {
      const ticket = next++
      open.set(ticket, now)
      return ticket
    },
    done(ticket) {
      open.delete(ticket)
    },
    waiting() {
      return open.size
    },
    oldestAt() {
      for (const at of open.values()) return at
      return undefined
    }
  }
}

/** Sums the channels' counters at `now`. */
export const summarize = (channels: Iterable<ChannelInput>, now: number): Snapshot => {
  let waiting = 0
  let oldest = now
  let holding = 0
  for (const c of channels) {
    const n = c.waiting()
    if (n === 0) continue
    waiting += n
    holding++
    const at = c.oldestAt()
    if (at !== undefined && at < oldest) oldest = at
  }
  return { waiting, oldestAgeMs: now - oldest, channels: holding }
}

const make = Effect.gen(function*() {
  const config = yield* ProviderInputConfig
  const channels = new Set<ChannelInput>()
  const watchers = new Map<ChannelInput, (oldestAgeMs: number) => Effect.Effect<void>>()
  const snapshot = Effect.map(Clock.currentTimeMillis, (now) => summarize(channels, now))

  const sample = Effect.flatMap(snapshot, (s) =>
    Effect.zipRight(
      Effect.zipRight(
        Metric.set(waitingGauge, s.waiting),
        Metric.set(oldestGauge, s.oldestAgeMs / 1000)
      ),
      s.waiting === 0 ?
        Effect.void :
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.forEach(watchers, ([input, waiting]) => {
            const at = input.oldestAt()
            return at === undefined ? Effect.void : waiting(now - at)
          }, { discard: true }))
    ))
  yield* Effect.forkScoped(Effect.repeat(sample, Schedule.spaced("1 second")))
  // said at start, not first during an outage: a spool the runner cannot write keeps nothing
  const refused = config.spoolDir === undefined ? undefined : ProviderInputSpool.unwritable(config.spoolDir)
  if (refused !== undefined) {
    yield* Effect.logError(
      "the provider input spool is not writable: input waiting for the database during an outage is kept in " +
        "memory only and lost if the runner is killed; give PROVIDER_INPUT_SPOOL_DIR (or DATA_DIR) a writable " +
        "volume (docs/OPERATING.md \"Provider input during a database outage\")"
    ).pipe(Effect.annotateLogs({ spool_dir: config.spoolDir, reason: refused }))
  }
  // one line a minute while anything waits: an outage is visible in the log without a line per item
  yield* Effect.forkScoped(Effect.repeat(
    Effect.flatMap(
      snapshot,
      (s) =>
        s.waiting === 0 ? Effect.void : Effect.logWarning("provider input waiting for the database").pipe(
          Effect.annotateLogs({
            waiting: s.waiting,
            channels: s.channels,
            oldest_age_s: Math.round(s.oldestAgeMs / 1000)
          })
        )
    ),
    Schedule.spaced("1 minute")
  ))

  const trackWith = (waiting?: (oldestAgeMs: number) => Effect.Effect<void>) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const input = makeChannelInput()
        channels.add(input)
        if (waiting !== undefined) watchers.set(input, waiting)
        return input
      }),
      (input) =>
        Effect.sync(() => {
          channels.delete(input)
          watchers.delete(input)
        })
    )

  return {
    config,
    track: trackWith(),
    trackWith,
    snapshot,
    degraded: Effect.map(snapshot, (s) =>
      s.waiting > 0 && s.oldestAgeMs > Duration.toMillis(config.readyMaxAge)
        ? `provider input waited ${Math.round(s.oldestAgeMs / 1000)} s to be recorded (${s.waiting} items)`
        : undefined)
  }
})

/** The runner's backlog; its settings from the environment (`configLayerFromEnv`) unless provided. */
export const layerWithoutConfig = Layer.scoped(ProviderInputBacklog, make)

export const layer = layerWithoutConfig.pipe(Layer.provide(configLayerFromEnv))
