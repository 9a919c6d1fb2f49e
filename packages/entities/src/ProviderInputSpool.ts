/**
 * Provider input kept on the runner's disk while it waits for the database (docs/OPERATING.md
 * "Provider input during a database outage"): what a channel took from its provider and could not
 * record at once is appended to a file of that channel's, `<dir>/<channel id>.jsonl`, written and
 * fsynced before the runner goes on; once the database took everything the channel held, the file
 * is removed. A runner killed meanwhile (`kill -9`, an out-of-memory kill, a power cut of the
 * process but not of its disk) finds the file at its next start of that channel's connection, and
 * records what it lists first, before anything the link hears (`replay`). Only while something
 * waits is anything written: a runner whose database answers never touches the disk here.
 *
 * The file is append-only, one JSON object a line: `{"k":key,"e":event}` when an item is kept,
 * `{"d":key}` once it is recorded. A last line cut short by the kill is skipped (counted as
 * unreadable). Recording is idempotent for every kind of input (an inbound message by its provider
 * id, a receipt never moves a message back, a mapping or a check is kept once), so an item recorded
 * whose `d` line the kill cut off is recorded again harmlessly.
 *
 * Node's `fs` synchronous calls on purpose: an append and its fsync are short, happen only during
 * an outage, and nothing may come between taking an item and having it on disk.
 */
import type { ChannelProvider } from "@switchboard/providers"
import { Effect, Metric } from "effect"
import { appendFileSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

export const replayedCounter = Metric.counter("switchboard_provider_input_replayed_total", {
  description: "Provider input a runner found in its spool at start (kept during an outage, not recorded before " +
    "the process ended) and recorded again",
  incremental: true
})

export const spooledCounter = Metric.counter("switchboard_provider_input_spooled_total", {
  description: "Provider input written to the runner's spool because the database could not take it at once",
  incremental: true
})

/**
 * Why the runner could not write to `dir` (made 0700 if missing; a probe file written, fsynced and
 * removed), or `undefined` when it can. Asked once at start: a spool the runner cannot write keeps
 * nothing on disk, so what waits during an outage is lost with the process.
 */
export const unwritable = (dir: string): string | undefined => {
  const probe = join(dir, `.probe-${process.pid}`)
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    writeFileSync(probe, "", { mode: 0o600, flush: true })
    rmSync(probe, { force: true })
    return undefined
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error)
  }
}

/** An item as read back from a spool: its key in the file and the event. */
export interface Spooled {
  readonly key: number
  readonly event: ChannelProvider.ProviderEvent
}

/** What a spool file holds: its items not marked recorded, in the order kept, and the lines that did not parse. */
export const parse = (text: string): { readonly open: ReadonlyArray<Spooled>; readonly unreadable: number } => {
  const open = new Map<number, ChannelProvider.ProviderEvent>()
  let unreadable = 0
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    try {
      const entry = JSON.parse(line) as { k?: unknown; e?: unknown; d?: unknown }
      if (typeof entry.d === "number") open.delete(entry.d)
      else if (typeof entry.k === "number" && isEvent(entry.e)) open.set(entry.k, entry.e)
      else unreadable++
    } catch {
      unreadable++
    }
  }
  return { open: Array.from(open, ([key, event]) => ({ key, event })), unreadable }
}

const TAGS: ReadonlySet<string> = new Set<ChannelProvider.ProviderEvent["_tag"]>([
  "Receipt",
  "Inbound",
  "CallOffered",
  "StatusChanged",
  "SendRejected",
  "LidMapped",
  "RestrictionReported",
  "RecipientChecked"
])

const isEvent = (value: unknown): value is ChannelProvider.ProviderEvent =>
  typeof value === "object" && value !== null && TAGS.has((value as { _tag?: unknown })._tag as string)

/**
 * One channel's spool file. `replay` once, before the connection's events are handled; then
 * `keep` what must wait and `recorded` as each is recorded (the file goes once none is open).
 */
export interface ChannelSpool {
  /** the file's open items, in the order kept (read once; counted and logged when any) */
  readonly replay: Effect.Effect<ReadonlyArray<Spooled>>
  /** appends the events (each gets a key) and fsyncs; answers their keys, in order */
  readonly keep: (events: ReadonlyArray<ChannelProvider.ProviderEvent>) => Effect.Effect<ReadonlyArray<number>>
  /** marks an item recorded; the file is removed once none is open */
  readonly recorded: (key: number) => Effect.Effect<void>
  /** items in the file not marked recorded */
  readonly open: () => number
}

/** The spool of `channelId` under `dir`; a disk that refuses is logged and the item stays in memory only. */
export const channelSpool = (dir: string, channelId: string): ChannelSpool => {
  const file = join(dir, `${channelId.replace(/[^A-Za-z0-9_-]/g, "_")}.jsonl`)
  const open = new Set<number>()
  let next = 0
  let replayed = false

  // the spool holds what contacts wrote (texts, numbers): readable by the service's user only
  const append = (text: string, sync: boolean) => {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    if (!sync) return appendFileSync(file, text, { mode: 0o600 })
    const fd = openSync(file, "a", 0o600)
    try {
      appendFileSync(fd, text)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  }

  const replay = Effect.suspend(() => {
    if (replayed) return Effect.succeed([] as ReadonlyArray<Spooled>)
    replayed = true
    let text: string
    try {
      text = readFileSync(file, "utf8")
    } catch {
      return Effect.succeed([] as ReadonlyArray<Spooled>)
    }
    const { open: items, unreadable } = parse(text)
    for (const item of items) {
      open.add(item.key)
      next = Math.max(next, item.key + 1)
    }
    if (items.length === 0) rmSync(file, { force: true })
    return Effect.as(
      items.length === 0 && unreadable === 0 ? Effect.void : Effect.zipRight(
        Effect.logWarning("provider input found in the spool: recorded before the link's").pipe(
          Effect.annotateLogs({ channel_id: channelId, replayed: items.length, unreadable_lines: unreadable })
        ),
        Metric.incrementBy(replayedCounter, items.length)
      ),
      items
    )
  })

  const keep = (events: ReadonlyArray<ChannelProvider.ProviderEvent>) =>
    Effect.suspend(() => {
      if (events.length === 0) return Effect.succeed([] as ReadonlyArray<number>)
      const keys = events.map(() => next++)
      try {
        append(events.map((e, i) => JSON.stringify({ k: keys[i], e }) + "\n").join(""), true)
      } catch (error) {
        return Effect.as(
          Effect.logError("provider input not written to the spool: kept in memory only").pipe(
            Effect.annotateLogs({ channel_id: channelId, items: events.length, reason: String(error) })
          ),
          [] as ReadonlyArray<number>
        )
      }
      for (const key of keys) open.add(key)
      return Effect.as(Metric.incrementBy(spooledCounter, events.length), keys)
    })

  const recorded = (key: number) =>
    Effect.sync(() => {
      if (!open.delete(key)) return
      try {
        // not fsynced: a mark lost to a kill means the item is recorded again, harmlessly
        if (open.size === 0) rmSync(file, { force: true })
        else append(JSON.stringify({ d: key }) + "\n", false)
      } catch {
        // the item is recorded; a file left behind is replayed as a repeat
      }
    })

  return { replay, keep, recorded, open: () => open.size }
}
