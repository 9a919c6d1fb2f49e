/**
 * The retention settings (docs/CONFIGURATION.md), read once at start with the process's other
 * settings, before any database is created or opened: `MEDIA_RETENTION_DAYS` (default 30, at least
 * 1), `EVENT_RETENTION_DAYS` (unset or empty: events kept for good; else at least 90) and
 * `MESSAGE_RETENTION_DAYS` (unset or empty: messages kept for good; else at least 30). A value
 * that does not parse stops the process with one line (`ConfigFailure`), instead of the media
 * worker or the partition keeper failing on it later, again and again.
 *
 * Everything that applies retention reads this service (the media worker and uploads, the
 * partition keeper, the message reads), never the environment. Not provided, it is the defaults
 * (a test's app); each process's `main` provides `layerFromEnv`.
 */
import { Media } from "@switchboard/domain"
import { Clock, Config, Context, Effect, Layer, Option } from "effect"
import { mediaRetentionDays } from "./MediaRepo.js"
import { eventRetentionDays, keptIds, messageRetentionDays } from "./PartitionsRepo.js"

/** Days each kind of data is kept (none: for good). */
export interface Retention {
  readonly mediaDays: number
  readonly eventDays: Option.Option<number>
  readonly messageDays: Option.Option<number>
}

export class RetentionSettings extends Context.Reference<RetentionSettings>()("@switchboard/db/RetentionSettings", {
  defaultValue: (): Retention => ({
    mediaDays: Media.DEFAULT_MEDIA_RETENTION_DAYS,
    eventDays: Option.none(),
    messageDays: Option.none()
  })
}) {}

/** The settings from the environment (a bad one fails with every bad setting named). */
export const layerFromEnv = Layer.effect(
  RetentionSettings,
  // all read, so one line names every setting that is wrong
  Config.all({ mediaDays: mediaRetentionDays, eventDays: eventRetentionDays, messageDays: messageRetentionDays })
)

/** Fixed settings (tests), the rest at their defaults. */
export const layer = (settings: Partial<Retention>) =>
  Layer.succeed(RetentionSettings, { ...RetentionSettings.defaultValue(), ...settings })

/**
 * The messages `retention` keeps now: its days and the ids of the messages made since then
 * (`PartitionsRepo.keptIds`: a read limited to them reads only their partitions); `undefined`
 * while messages are kept for good (no `MESSAGE_RETENTION_DAYS`).
 */
export const keptMessages = (retention: Retention): Effect.Effect<
  { readonly days: number; readonly ids: { readonly lower: string; readonly upper: string } } | undefined
> =>
  Option.match(retention.messageDays, {
    onNone: () => Effect.succeed(undefined),
    onSome: (days) => Effect.map(Clock.currentTimeMillis, (now) => ({ days, ids: keptIds("msg", days, now) }))
  })
