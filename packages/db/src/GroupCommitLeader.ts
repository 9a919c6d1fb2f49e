/**
 * Group commit led by the callers themselves (the api node's send writes, `SendWritesRepo.writeShared`).
 *
 * A call that finds no statement of this group running writes at once, on its own fiber, alone:
 * an idle process adds no wait and no hop to a lone call. Calls made while a statement runs wait
 * in a queue; when it has finished, the first of them leads the next write with everything
 * queued (at most `maxBatch`), so one round trip serves all of them. No timer: the window is the
 * time the statement before took. Each caller gets its own item's outcome (`write` answers one
 * `Exit` per item, in their order), and only once the statement that wrote it has finished.
 *
 * Unlike `GroupCommit` of `@switchboard/entities` (a writing fiber of the runner's own), the
 * statement runs on a caller's fiber, so it is traced and attributed to a request like a
 * statement of its own. A caller interrupted while it waits is taken out of the queue (nothing of
 * it is written); one interrupted after its item was taken is still written.
 */
import { Deferred, Effect, Exit, FiberId } from "effect"

type Signal<B> = { readonly _tag: "Lead" } | { readonly _tag: "Done"; readonly exit: Exit.Exit<B> }

const LEAD = { _tag: "Lead" } as const

export const make = <A, B>(
  write: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<Exit.Exit<B>>>,
  maxBatch: number
): (item: A) => Effect.Effect<B> => {
  interface Entry {
    readonly item: A
    readonly signal: Deferred.Deferred<Signal<B>>
    promoted: boolean
  }
  const waiting: Array<Entry> = []
  let leading = false

  // the statement has finished: the first waiting call leads the next one, or nobody leads
  const handOver = () => {
    const next = waiting[0]
    if (next === undefined) {
      leading = false
      return
    }
    next.promoted = true
    Deferred.unsafeDone(next.signal, Effect.succeed(LEAD))
  }

  const lead = (own: Entry): Effect.Effect<B> =>
    Effect.suspend(() => {
      const batch = waiting.splice(0, maxBatch)
      return write(batch.map((e) => e.item)).pipe(
        Effect.exit,
        Effect.flatMap((exit) => {
          let mine: Exit.Exit<B> = Exit.die(new Error("a group commit lost its leader's item"))
          batch.forEach((entry, i) => {
            const outcome: Exit.Exit<B> = exit._tag === "Success"
              ? exit.value[i] ?? Exit.die(new Error("a group commit's write answered too few items"))
              : Exit.failCause(exit.cause)
            if (entry === own) mine = outcome
            else Deferred.unsafeDone(entry.signal, Effect.succeed({ _tag: "Done", exit: outcome }))
          })
          handOver()
          return mine
        }),
        Effect.uninterruptible
      )
    })

  return (item: A) =>
    Effect.suspend(() => {
      const entry: Entry = { item, signal: Deferred.unsafeMake<Signal<B>>(FiberId.none), promoted: false }
      waiting.push(entry)
      if (!leading) {
        leading = true
        return lead(entry)
      }
      return Effect.uninterruptibleMask((restore) =>
        restore(Deferred.await(entry.signal)).pipe(
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              const at = waiting.indexOf(entry)
              if (at >= 0) waiting.splice(at, 1)
              if (entry.promoted) handOver()
            })
          ),
          Effect.flatMap((signal): Effect.Effect<B> => signal._tag === "Lead" ? lead(entry) : signal.exit)
        )
      )
    })
}
