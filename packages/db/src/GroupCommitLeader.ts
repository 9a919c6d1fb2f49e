/**
 * Group commit led by the callers themselves (the api node's send writes, `SendWritesRepo.writeShared`).
 *
 * At most `maxInFlight` statements of the group run at once. A call that finds a statement slot
 * free (and its key free, below) writes at once, on its own fiber, alone: an idle process adds no
 * wait and no hop to a lone call. Calls made while every slot is taken wait in a queue; when a
 * statement has finished, the first of them leads the next write with the queued calls it can
 * take (at most `maxBatch`), so one round trip serves all of them. No timer: the window is the
 * time a statement before took. Each caller gets its own item's outcome (`write` answers one
 * `Exit` per item, in their order), and only once the statement that wrote it has finished.
 *
 * `key` names what one statement must not write twice (for the send: its conversation, a row a
 * statement cannot lock and update twice). A statement takes at most one call per key, and none
 * whose key is in a statement still running: calls with one key are written one after the other,
 * in the order they were made, each once the one before has finished (its rows committed). So a
 * burst to one key waits only for the statements of that key, not behind unrelated ones: when its
 * statement finishes, the next call of that key leads a statement of its own if a slot is free.
 *
 * Unlike `GroupCommit` (a writing fiber of its own, in the runner), the
 * statement runs on a caller's fiber, so it is traced and attributed to a request like a
 * statement of its own. A caller interrupted while it waits (before its statement started) is
 * taken out of it (nothing of it is written); one interrupted once its statement started is
 * still written.
 */
import { Deferred, Effect, Exit, FiberId } from "effect"

export interface Options<A, B, E = never> {
  /** writes the items in one statement; one `Exit` per item, in their order */
  readonly write: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<Exit.Exit<B, E>>>
  /** at most one item per key in a statement, and none whose key is in a running one */
  readonly key: (item: A) => string
  /** items per statement */
  readonly maxBatch: number
  /** statements running at once */
  readonly maxInFlight: number
}

type Signal<B, E> = { readonly _tag: "Lead" } | { readonly _tag: "Done"; readonly exit: Exit.Exit<B, E> }

const LEAD = { _tag: "Lead" } as const

export const make = <A, B, E = never>(options: Options<A, B, E>): (item: A) => Effect.Effect<B, E> => {
  const { maxBatch, write } = options
  const maxInFlight = Math.max(1, options.maxInFlight)
  interface Batch {
    /** the first one leads; members interrupted before it started are taken out */
    readonly entries: Array<Entry>
    started: boolean
  }
  interface Entry {
    readonly item: A
    readonly key: string
    readonly signal: Deferred.Deferred<Signal<B, E>>
    /** the statement this call was given to (`undefined`: waiting in the queue) */
    batch: Batch | undefined
  }
  const waiting: Array<Entry> = []
  /** the keys of the statements given out and not finished */
  const busy = new Set<string>()
  /** statements given out (started or about to be) and not finished */
  let running = 0

  // gives out statements while a slot is free and a queued call may be written: in the queue's
  // order, the first call of each key not busy (a later call of a key waits for the one before)
  const dispatch = () => {
    while (running < maxInFlight && waiting.length > 0) {
      const seen = new Set<string>()
      const taken: Array<Entry> = []
      for (const entry of waiting) {
        if (taken.length === maxBatch) break
        if (busy.has(entry.key) || seen.has(entry.key)) {
          seen.add(entry.key)
          continue
        }
        seen.add(entry.key)
        taken.push(entry)
      }
      if (taken.length === 0) return
      const batch: Batch = { entries: taken, started: false }
      for (const entry of taken) {
        waiting.splice(waiting.indexOf(entry), 1)
        busy.add(entry.key)
        entry.batch = batch
      }
      running++
      Deferred.unsafeDone(taken[0]!.signal, Effect.succeed(LEAD))
    }
  }

  const lead = (own: Entry, batch: Batch): Effect.Effect<B, E> =>
    Effect.suspend(() => {
      batch.started = true
      const entries = batch.entries
      return write(entries.map((e) => e.item)).pipe(
        Effect.exit,
        Effect.flatMap((exit) => {
          let mine: Exit.Exit<B, E> = Exit.die(new Error("a group commit lost its leader's item"))
          entries.forEach((entry, i) => {
            const outcome: Exit.Exit<B, E> = exit._tag === "Success"
              ? exit.value[i] ?? Exit.die(new Error("a group commit's write answered too few items"))
              : Exit.failCause(exit.cause)
            busy.delete(entry.key)
            if (entry === own) mine = outcome
            else Deferred.unsafeDone(entry.signal, Effect.succeed({ _tag: "Done", exit: outcome }))
          })
          running--
          dispatch()
          return mine
        }),
        Effect.uninterruptible
      )
    })

  // interrupted before its statement started: nothing of it is written; what it held (its place
  // in a statement given out, the lead of it) passes on
  const leave = (entry: Entry) => {
    const batch = entry.batch
    if (batch === undefined) {
      const at = waiting.indexOf(entry)
      if (at >= 0) waiting.splice(at, 1)
    } else if (!batch.started) {
      const at = batch.entries.indexOf(entry)
      batch.entries.splice(at, 1)
      busy.delete(entry.key)
      if (at === 0) {
        const next = batch.entries[0]
        if (next === undefined) running--
        else Deferred.unsafeDone(next.signal, Effect.succeed(LEAD))
      }
    }
    // a later call of its key, or a slot, may be free now
    dispatch()
  }

  return (item: A) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const entry: Entry = {
          item,
          key: options.key(item),
          signal: Deferred.unsafeMake<Signal<B, E>>(FiberId.none),
          batch: undefined
        }
        waiting.push(entry)
        dispatch()
        if (entry.batch !== undefined && entry.batch.entries[0] === entry) return lead(entry, entry.batch)
        return restore(Deferred.await(entry.signal)).pipe(
          Effect.onInterrupt(() => Effect.sync(() => leave(entry))),
          Effect.flatMap((signal): Effect.Effect<B, E> =>
            signal._tag === "Lead" ? lead(entry, entry.batch!) : signal.exit
          )
        )
      })
    )
}
