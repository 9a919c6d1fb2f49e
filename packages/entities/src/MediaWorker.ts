/**
 * A cluster singleton that stores the files of inbound messages (docs/API.md "Media"). The `media` rows
 * are the queue (`MediaRepo`): it claims due downloads, streams each from its channel's provider
 * (`ChannelProvider.downloadMedia`) into `MediaStore` (size capped while streaming, hashed as it
 * goes), checks the size and hash the provider announced, and settles the media `ready`; a
 * retryable failure is tried again with backoff, up to `MAX_ATTEMPTS`, then the media is `failed`
 * with a reason. Either way the message shows the outcome and `message.received` goes out then,
 * once (same transaction). A runner killed mid-download leaves a claim its successor releases on
 * start (a singleton runs once), so the download starts again and still ends with one event.
 *
 * It also purges media past retention (`MEDIA_RETENTION_DAYS`): bytes deleted, status `expired`;
 * and removes uploads a crash left `pending` (`STALE_UPLOAD_MS` after they began), bytes and row.
 */
import { Singleton } from "@effect/cluster"
import {
  ChannelsRepo,
  EventsRepo,
  MediaRepo,
  MediaStore,
  MessagesRepo,
  Notifications,
  Transactions
} from "@switchboard/db"
import { MediaSniff, MessageContent, Schemas } from "@switchboard/domain"
import { ChannelProvider, ChannelProviders, InboundMetrics } from "@switchboard/providers"
import { Cause, Chunk, Clock, Duration, Effect, Layer, Option, Stream } from "effect"
import { receivedEvent } from "./InboundMessages.js"
import * as Loops from "./Loops.js"

/** Attempts of one download before the media is `failed`. */
export const MAX_ATTEMPTS = 5
/** Downloads run at once. */
const CONCURRENCY = 4
/** One attempt may take this long (a 100 MiB document on a slow link). */
const ATTEMPT_TIMEOUT = Duration.minutes(15)
/**
 * How often the worker looks for due downloads unprompted: a recorded inbound file tells it at
 * commit (`Notifications.MEDIA_DUE`), a download's end and a retry's due time wake it too; this
 * catches a lost notification (a listen reconnecting, PgBouncer: docs/CONFIGURATION.md).
 */
const IDLE_POLL = Duration.seconds(2)
/** How often it looks where it cannot listen (the embedded database), and after a failed look. */
const POLL = Duration.millis(500)
/** Media purged per sweep. */
const EXPIRY_BATCH = 100

/**
 * An upload still `pending` this long after it began was cut off by a crash (a live one ends or is
 * cut off within `HTTP_REQUEST_TIMEOUT`, 30 s by default): its row and bytes are removed.
 */
export const STALE_UPLOAD_MS = 60 * 60_000

/** Uploads begun before this instant (epoch ms) and still pending are a crash's leftovers. */
export const staleUploadCutoff = (now: number): number => now - STALE_UPLOAD_MS

/** The wait before attempt `attempt + 1`: 2 s, 4 s, 8 s, ... at most 5 minutes. */
export const backoffMs = (attempt: number) => Math.min(2_000 * 2 ** Math.max(0, attempt - 1), 300_000)

/** A provider's announced hash as hex (Baileys announces base64). */
export const hexHash = (hash: string): string =>
  /^[0-9a-f]{64}$/i.test(hash) ? hash.toLowerCase() : Buffer.from(hash, "base64").toString("hex")

export const make = Effect.gen(function*() {
  const repo = yield* MediaRepo.MediaRepo
  const store = yield* MediaStore.MediaStore
  const messages = yield* MessagesRepo.MessagesRepo
  const events = yield* EventsRepo.EventsRepo
  const channels = yield* ChannelsRepo.ChannelsRepo
  const transactions = yield* Transactions.Transactions
  const providers = yield* ChannelProviders.ChannelProviders
  const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

  /** The media's end: the row, the message and its one `message.received`, together. */
  const settle = (
    row: MediaRepo.MediaDownload,
    outcome: { readonly _tag: "ready"; readonly sizeBytes: number; readonly sha256: string } | {
      readonly _tag: "failed"
      readonly reason: string
    }
  ) =>
    Effect.gen(function*() {
      const at = yield* now
      const settled = yield* transactions.run(Effect.gen(function*() {
        const moved = yield* repo.settle({
          id: row.id,
          status: outcome._tag,
          sizeBytes: outcome._tag === "ready" ? outcome.sizeBytes : null,
          sha256: outcome._tag === "ready" ? outcome.sha256 : null,
          failure: outcome._tag === "failed" ? outcome.reason : null,
          now: at
        })
        if (!moved) return false
        const updated = yield* messages.mediaSettled({
          mediaId: row.id,
          messageId: row.message_id,
          status: outcome._tag,
          failure: outcome._tag === "failed" ? outcome.reason : null,
          sizeBytes: outcome._tag === "ready" ? outcome.sizeBytes : null,
          sha256: outcome._tag === "ready" ? outcome.sha256 : null,
          now: at
        })
        for (const message of updated) {
          yield* events.append({ workspaceId: message.workspace_id, event: receivedEvent(message), occurredAt: at })
        }
        return true
      }))
      if (settled) {
        yield* InboundMetrics.countInbound(row.kind, outcome._tag === "ready" ? "media_stored" : "media_failed")
        if (outcome._tag === "failed") {
          yield* Effect.logWarning("inbound media not stored").pipe(
            Effect.annotateLogs({
              media_id: row.id,
              message_id: row.message_id,
              kind: row.kind,
              reason: outcome.reason
            })
          )
        }
      }
    })

  /** One attempt: the bytes streamed from the provider into the store, then checked. */
  const attempt = (row: MediaRepo.MediaDownload) =>
    Effect.gen(function*() {
      const found = row.channel_id === null ? Option.none() : yield* channels.findById(row.channel_id)
      const download = Option.flatMap(
        found,
        ({ channel }) => Option.flatMap(providers.get(channel.provider), (p) => Option.fromNullable(p.downloadMedia))
      )
      if (Option.isNone(download)) {
        return yield* new ChannelProvider.MediaDownloadFailed({
          retryable: false,
          reason: "The channel's provider cannot fetch this media"
        })
      }
      const limit = MessageContent.MEDIA_LIMIT_BYTES[row.kind]
      const stored = yield* store.write(row.id, download.value(row.channel_id!, row.source), limit).pipe(
        Effect.catchTag("MediaTooLarge", (e) =>
          new ChannelProvider.MediaDownloadFailed({
            retryable: false,
            reason: `The file is larger than the ${row.kind} limit of ${e.limitBytes} bytes`
          })),
        Effect.timeoutFail({
          duration: ATTEMPT_TIMEOUT,
          onTimeout: () =>
            new ChannelProvider.MediaDownloadFailed({ retryable: true, reason: "The download timed out" })
        })
      )
      if (row.expected_size !== null && row.expected_size !== stored.sizeBytes) {
        return yield* new ChannelProvider.MediaDownloadFailed({
          retryable: true,
          reason: "The file's size is not the size announced"
        })
      }
      if (row.expected_sha256 !== null && hexHash(row.expected_sha256) !== stored.sha256) {
        return yield* new ChannelProvider.MediaDownloadFailed({
          retryable: true,
          reason: "The file's hash is not the hash announced"
        })
      }
      // the check every door runs (docs/API.md "Media"): bytes of the kind and of the type announced
      const head = yield* Stream.runCollect(store.read(row.id, 0, MediaSniff.SNIFF_BYTES - 1))
      const verdict = MediaSniff.checkFile({
        kind: row.kind,
        declared: row.mime_type,
        head: new Uint8Array(Buffer.concat(Chunk.toReadonlyArray(head))),
        // as the provider announced it (read leniently when it was recorded)
        lenient: true
      })
      if (verdict._tag === "refused") {
        return yield* new ChannelProvider.MediaDownloadFailed({
          retryable: false,
          reason: verdict.refusal._tag === "empty"
            ? "The file is empty"
            : `The file's bytes are not ${/^[aeiou]/.test(row.kind) ? "an" : "a"} ${row.kind} of the type announced`
        })
      }
      return stored
    }).pipe(
      // the database went away under the download: an attempt like a network failure's
      Effect.catchTag(
        "DatabaseUnavailable",
        () => new ChannelProvider.MediaDownloadFailed({ retryable: true, reason: "The database was unavailable" })
      )
    )

  /** Runs one claimed download to its end or to its next attempt; how long until that attempt is due (ms), if any. */
  const run = (row: MediaRepo.MediaDownload) =>
    attempt(row).pipe(
      Effect.catchAllDefect((defect) =>
        Effect.zipRight(
          Effect.logError("inbound media download failed unexpectedly", Cause.die(defect)),
          Effect.fail(
            new ChannelProvider.MediaDownloadFailed({ retryable: true, reason: "The download failed unexpectedly" })
          )
        )
      ),
      Effect.matchEffect({
        onSuccess: (stored) => Effect.as(settle(row, { _tag: "ready", ...stored }), Option.none<number>()),
        onFailure: (error) =>
          Effect.gen(function*() {
            yield* store.purge(row.id).pipe(Effect.catchAllCause(() => Effect.void))
            if (error.retryable && row.attempts < MAX_ATTEMPTS) {
              const at = yield* Clock.currentTimeMillis
              yield* Effect.logInfo("inbound media download will be retried").pipe(
                Effect.annotateLogs({ media_id: row.id, attempt: row.attempts, reason: error.reason })
              )
              yield* repo.retryLater(row.id, Schemas.toTimestamp(at + backoffMs(row.attempts)), Schemas.toTimestamp(at))
              return Option.some(backoffMs(row.attempts))
            }
            yield* settle(row, { _tag: "failed", reason: error.reason })
            return Option.none<number>()
          })
      })
    )

  /** Claims and runs due downloads until none is due; answers how many ran. */
  const drain = Effect.gen(function*() {
    let ran = 0
    while (true) {
      const due = yield* repo.claimDue(yield* now, CONCURRENCY)
      if (due.length === 0) return ran
      yield* Effect.forEach(due, run, { concurrency: CONCURRENCY, discard: true })
      ran += due.length
    }
  })

  /** Purges media past retention: bytes deleted, `expired` on the media and the messages carrying it. */
  const expire = Effect.gen(function*() {
    const at = yield* now
    const due = yield* repo.dueForExpiry(at, EXPIRY_BATCH)
    for (const { id, messageId } of due) {
      yield* transactions.run(Effect.gen(function*() {
        if (!(yield* repo.expire(id, at))) return
        yield* store.purge(id)
        yield* messages.mediaSettled({
          mediaId: id,
          messageId,
          status: "expired",
          failure: null,
          sizeBytes: null,
          sha256: null,
          now: at
        })
      }))
    }
    return due.length
  })

  /** Removes uploads a crash left pending (`STALE_UPLOAD_MS`); how many. */
  const sweepUploads = Effect.gen(function*() {
    const at = yield* Clock.currentTimeMillis
    const removed = yield* repo.removeStaleUploads(Schemas.toTimestamp(staleUploadCutoff(at)), EXPIRY_BATCH)
    // the rows took their chunks with them; bytes kept in files (`MEDIA_STORE=filesystem`) go here
    yield* Effect.forEach(removed, (id) => store.purge(id), { discard: true })
    if (removed.length > 0) {
      yield* Effect.logInfo("uploads a crash left pending removed").pipe(
        Effect.annotateLogs({ media_ids: removed.join(","), count: removed.length })
      )
    }
    return removed.length
  })

  /**
   * Claims as many due downloads as there are free slots and starts each in the scope: a long
   * download (a 100 MiB document) holds one slot, not the others. Each download's end calls `wake`
   * (its slot is free for the next due one), and again when its next attempt comes due.
   */
  let inFlight = 0
  const pump = (wake: Effect.Effect<void>) =>
    Effect.gen(function*() {
      const free = CONCURRENCY - inFlight
      if (free <= 0) return
      const due = yield* repo.claimDue(yield* now, free)
      for (const row of due) {
        inFlight++
        yield* run(row).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logWarning("inbound media download failed; retrying later", cause).pipe(
              // its claim given back, so it does not wait for the next singleton start
              Effect.zipRight(
                Effect.flatMap(
                  Clock.currentTimeMillis,
                  (at) =>
                    repo.retryLater(row.id, Schemas.toTimestamp(at + backoffMs(row.attempts)), Schemas.toTimestamp(at))
                )
              ),
              Effect.as(Option.some(backoffMs(row.attempts))),
              Effect.catchAllCause(() => Effect.succeed(Option.none<number>()))
            )
          ),
          Effect.ensuring(Effect.sync(() => inFlight--)),
          Effect.tap((retryIn) =>
            Effect.zipRight(
              wake,
              Option.match(retryIn, {
                onNone: () => Effect.void,
                onSome: (ms) => Effect.forkScoped(Effect.delay(wake, ms))
              })
            )
          ),
          Effect.forkScoped
        )
      }
    })

  return { drain, pump, run, expire, sweepUploads, releaseClaims: repo.releaseClaims() } as const
})

/** What the worker reads and writes (the providers come from the messaging layer). */
export const dependencies = Layer.mergeAll(
  MediaRepo.MediaRepo.Default,
  MediaStore.MediaStore.Default,
  MessagesRepo.MessagesRepo.Default,
  EventsRepo.EventsRepo.Default,
  ChannelsRepo.ChannelsRepo.Default,
  Transactions.Transactions.Default
)

export const MediaWorkerLive = Singleton.make(
  "MediaWorker",
  Loops.supervised(
    "media worker",
    Effect.gen(function*() {
      const worker = yield* make
      // a previous instance's claims (its runner died mid-download) are free again
      yield* worker.releaseClaims.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("media claims not released", cause))
      )
      let lastExpiry = 0
      // downloads run in this scope: when the singleton moves, they stop with it
      yield* Loops.wakeable({
        wakeups: yield* Notifications.listen(Notifications.MEDIA_DUE),
        idle: IDLE_POLL,
        poll: POLL,
        failed: "media worker failed; retrying",
        step: (wake) =>
          Effect.gen(function*() {
            yield* worker.pump(wake)
            const at = yield* Clock.currentTimeMillis
            if (at - lastExpiry >= 60_000) {
              lastExpiry = at
              yield* worker.expire
              yield* worker.sweepUploads
            }
          })
      }).pipe(Effect.scoped)
    })
  )
).pipe(Layer.provide(dependencies))
