/**
 * Work queued in rows, told to the worker that takes it as the row commits: the statement that
 * queues the work calls `pg_notify(channel, id)` in its transaction, and Postgres delivers the
 * notification to each process `LISTEN`ing on the channel at commit, never before and not for a
 * rolled-back transaction (https://www.postgresql.org/docs/current/sql-notify.html). A notification
 * is a hint, not the queue: one sent while no listener was connected is lost, so a worker still
 * polls its rows, only more seldom (`Loops.wakeable`).
 *
 * Only on a Postgres server: listening takes a connection of its own (`@effect/sql-pg` opens one
 * per process, shared by every channel it listens on; docs/CONFIGURATION.md "Connection budget"),
 * and the embedded database has exactly one.
 */
import type { SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, type Stream } from "effect"
import { DatabaseConfig } from "./DatabaseConfig.js"

/** An inbound file due for download was recorded (payload: the media id; `MediaRepo.createInbound`). */
export const MEDIA_DUE = "media_due"

/** A contact import was queued (payload: the import id; `ContactImportsRepo.insert`). */
export const CONTACT_IMPORT_QUEUED = "contact_import_queued"

/**
 * The notifications on `channel` (their payloads) as they commit, or `None` where nothing can be
 * listened on: the embedded database, or a process without a Postgres client. The stream fails
 * with an `SqlError` when its connection is lost; it may be run again.
 */
export const listen = (
  channel: string
): Effect.Effect<Option.Option<Stream.Stream<string, SqlError.SqlError>>> =>
  Effect.gen(function*() {
    const config = yield* Effect.serviceOption(DatabaseConfig)
    const pg = yield* Effect.serviceOption(PgClient.PgClient)
    if (Option.isNone(pg) || Option.isNone(config) || Option.isNone(config.value.url)) return Option.none()
    return Option.some(pg.value.listen(channel))
  })
