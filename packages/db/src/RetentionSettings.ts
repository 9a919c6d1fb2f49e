/**
 * The retention settings (docs/CONFIGURATION.md), read once at start with the process's other
 * settings, before any database is created or opened: `MEDIA_RETENTION_DAYS` (default 30, at least
 * 1) and `EVENT_RETENTION_DAYS` (unset or empty: events kept for good; else at least 90). A value
 * that does not parse stops the process with one line (`ConfigFailure`), instead of the media
 * worker or the partition keeper failing on it later, again and again.
 */
import { Config, Context, Layer, type Option } from "effect"
import { mediaRetentionDays } from "./MediaRepo.js"
import { eventRetentionDays } from "./PartitionsRepo.js"

export class RetentionSettings extends Context.Tag("@switchboard/db/RetentionSettings")<
  RetentionSettings,
  { readonly mediaDays: number; readonly eventDays: Option.Option<number> }
>() {}

export const layerFromEnv = Layer.effect(
  RetentionSettings,
  // both read, so one line names every setting that is wrong
  Config.all({ mediaDays: mediaRetentionDays, eventDays: eventRetentionDays })
)
