/**
 * A cluster singleton that runs contact imports (docs/API.md "Contact imports"). The job rows are the
 * queue: it claims the oldest unfinished import (one a dead runner left `running` included) and
 * works through its rows from `processed_rows` in batches of `BATCH_ROWS`. Each batch is one
 * transaction: its contacts (one `INSERT ... ON CONFLICT`), memberships and the import's counts
 * commit together, so a runner killed mid-import resumes after the last committed batch and never
 * counts or creates a row twice. The last batch emits the one `contact.import_completed`. A queued
 * import wakes it as its row commits (`Notifications.CONTACT_IMPORT_QUEUED`); it also looks every
 * `IDLE_POLL` (every `POLL` on the embedded database, which cannot tell it).
 */
import { Singleton } from "@effect/cluster"
import {
  ContactGroupsRepo,
  ContactImportsRepo,
  ContactsLimitLock,
  ContactsRepo,
  DatabaseUnavailable,
  EventsRepo,
  Notifications,
  Transactions,
  WorkspacesRepo
} from "@switchboard/db"
import { ContactCsv, Events, Ids, Plans, Schemas } from "@switchboard/domain"
import { Cause, Clock, Duration, Effect, Layer, Option } from "effect"
import * as Loops from "./Loops.js"

export const BATCH_ROWS = 1000

/** How often the worker looks for queued imports without being told of one (`Loops.wakeable`). */
const IDLE_POLL = Duration.seconds(2)
/** How often it looks where it cannot listen (the embedded database), and after a failed run. */
const POLL = Duration.millis(500)

/** The one `contact.import_completed` of an import that ended, with its counts. */
const importEnded = (
  job: ContactImportsRepo.ImportColumns,
  counts: ContactImportsRepo.ImportColumns,
  status: "completed" | "failed"
) =>
  Events.DomainEvent.make("contact.import_completed", {
    object: "contact_import",
    object_id: job.id,
    import_id: job.id,
    status,
    total_rows: counts.total_rows,
    created: counts.created,
    updated: counts.updated,
    skipped: counts.skipped,
    failed: counts.failed
  })

/**
 * Runs of one import that may fail in a row (a defect, not a row's error: those are counted)
 * before it is given up as `failed`, so one poisoned import cannot hold the queue for ever.
 */
export const MAX_RUN_FAILURES = 5

type Outcome =
  | { readonly _tag: "Write"; readonly row: Extract<ContactCsv.ImportRow, { _tag: "Valid" }> }
  | { readonly _tag: "Failed"; readonly error: ContactCsv.ImportRowError }
  | { readonly _tag: "Repeat"; readonly error: ContactCsv.ImportRowError }

/** What each row comes to, before the database: repeats of a number inside the file count once. */
export const outcomes = (rows: ReadonlyArray<ContactCsv.ImportRow>): Array<Outcome> => {
  const firstRow = new Map<string, number>()
  return rows.map((r): Outcome => {
    if (r._tag === "Invalid") return { _tag: "Failed", error: r.error }
    const first = firstRow.get(r.phone)
    if (first !== undefined) {
      return {
        _tag: "Repeat",
        error: {
          row: r.row,
          line: r.line,
          column: "phone_number",
          code: "duplicate_in_file",
          message: `Same phone number as row ${first}`
        }
      }
    }
    firstRow.set(r.phone, r.row)
    return { _tag: "Write", row: r }
  })
}

export const make = Effect.gen(function*() {
  const transactions = yield* Transactions.Transactions
  const imports = yield* ContactImportsRepo.ContactImportsRepo
  const contacts = yield* ContactsRepo.ContactsRepo
  const limitLock = yield* ContactsLimitLock.ContactsLimitLock
  const groups = yield* ContactGroupsRepo.ContactGroupsRepo
  const workspaces = yield* WorkspacesRepo.WorkspacesRepo
  const events = yield* EventsRepo.EventsRepo
  const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

  /**
   * How many more contacts the plan allows (`Infinity` when unlimited or not enforced). Under a
   * limit it takes the workspace's contacts lock first (held until the batch commits), so sends
   * and creates racing the batch wait for it and count its contacts (docs/LIMITS.md "Plans").
   */
  const room = Effect.fn("ContactImportWorker.room")(function*(workspaceId: string) {
    const workspace = yield* workspaces.findById(workspaceId)
    if (Option.isNone(workspace) || !Plans.ENTITLEMENTS.contacts.enforced) return Infinity
    const limit =
      Plans.resolveEntitlements(workspace.value.plan, yield* workspaces.overrides(workspaceId)).contacts.value
    if (typeof limit !== "number") return Infinity
    yield* limitLock.lock(workspaceId)
    return Math.max(0, limit - (yield* contacts.countForWorkspace(workspaceId)))
  })

  const batch = Effect.fn("ContactImportWorker.batch")(
    function*(job: ContactImportsRepo.ImportColumns, slice: ReadonlyArray<Outcome>, done: boolean) {
      return yield* transactions.run(Effect.gen(function*() {
        const at = yield* now
        const errors: Array<ContactCsv.ImportRowError> = []
        let failed = 0
        let skipped = 0
        for (const o of slice) {
          if (o._tag !== "Write") errors.push(o.error)
          if (o._tag === "Failed") failed++
          if (o._tag === "Repeat") skipped++
        }
        const writes = slice.flatMap((o) => o._tag === "Write" ? [o.row] : [])
        // the room first: its lock makes the numbers read next current too
        let allowed = yield* room(job.workspace_id)
        const existing = yield* contacts.existingPhones(job.workspace_id, writes.map((r) => r.phone))
        const admitted = writes.filter((r) => {
          if (existing.has(r.phone)) return true
          if (allowed > 0) {
            allowed--
            return true
          }
          failed++
          errors.push({
            row: r.row,
            line: r.line,
            column: null,
            code: "ENTITLEMENT_LIMIT_REACHED",
            message: "The plan's contacts entitlement is used up"
          })
          return false
        })
        const rows = yield* Effect.forEach(admitted, (r) =>
          Effect.map(Ids.newId("cnt"), (id) => ({
            id,
            phone: r.phone,
            name: r.name,
            email: r.email,
            attributes: r.attributes
          })))
        const written = yield* contacts.importBatch({
          workspaceId: job.workspace_id,
          rows,
          tags: job.tags,
          onConflict: job.on_conflict,
          now: at
        })
        const created = written.filter((w) => w.inserted).length
        const updated = job.on_conflict === "update" ? written.length - created : 0
        skipped += admitted.length - created - updated
        if (job.group_id !== null && written.length > 0) {
          const group = yield* groups.existingIds(job.workspace_id, [job.group_id])
          if (group.size > 0) yield* groups.addMembers(job.group_id, written.map((w) => w.id), at)
        }
        errors.sort((a, b) => a.row - b.row)
        const after = yield* imports.advance(
          job.id,
          { rows: slice.length, created, updated, skipped, failed, errors },
          done,
          at
        )
        if (done) {
          yield* events.append({
            workspaceId: job.workspace_id,
            event: importEnded(job, after, "completed"),
            occurredAt: at
          })
        }
      }))
    }
  )

  /** Runs one import to its end from where it stopped. */
  const run = Effect.fn("ContactImportWorker.run")(function*(job: ContactImportsRepo.ImportColumns) {
    const file = yield* imports.file(job.id)
    const country = job.default_country !== null && ContactCsv.isCountryCode(job.default_country)
      ? job.default_country
      : undefined
    const parsed = ContactCsv.parseContactCsv(file, country)
    // refused files never get a job row (checked before the 202); an emptied one has no rows left
    const all = outcomes(parsed._tag === "Parsed" ? parsed.rows : [])
    let start = job.processed_rows
    if (start >= all.length) return yield* batch(job, [], true)
    while (start < all.length) {
      const slice = all.slice(start, start + BATCH_ROWS)
      start += slice.length
      yield* batch(job, slice, start >= all.length)
    }
  })

  /** Marks an import `failed` with its counts so far and tells receivers (`status: "failed"`). */
  const giveUp = Effect.fn("ContactImportWorker.giveUp")(function*(job: ContactImportsRepo.ImportColumns) {
    const at = yield* now
    yield* transactions.run(Effect.gen(function*() {
      const failed = yield* imports.fail(job.id, at)
      if (Option.isNone(failed)) return
      const after = failed.value
      yield* events.append({ workspaceId: job.workspace_id, event: importEnded(job, after, "failed"), occurredAt: at })
    }))
  })

  /** Whether a run failed only because the database was unavailable (`DatabaseUnavailable`). */
  const passing = (cause: Cause.Cause<unknown>) =>
    Option.exists(Cause.failureOption(cause), DatabaseUnavailable.isDatabaseUnavailable)

  // failed runs per import (this worker's memory: a new runner starts counting again)
  const runFailures = new Map<string, number>()

  /** Claims and runs imports until none is left; `true` when it ran one. */
  const drain = Effect.gen(function*() {
    let ran = false
    while (true) {
      const job = yield* imports.claimNext(yield* now)
      if (Option.isNone(job)) return ran
      const failures = runFailures.get(job.value.id) ?? 0
      yield* run(job.value).pipe(
        Effect.tapErrorCause((cause) =>
          // a database away for a while is not the import's fault: it does not count
          passing(cause)
            ? Effect.void
            : failures + 1 >= MAX_RUN_FAILURES
            ? Effect.zipRight(
              Effect.logError("contact import given up after repeated failures", cause, { import_id: job.value.id }),
              giveUp(job.value)
            )
            : Effect.sync(() => runFailures.set(job.value.id, failures + 1))
        ),
        Effect.sandbox,
        Effect.catchAll((cause) =>
          !passing(cause) && failures + 1 >= MAX_RUN_FAILURES
            ? Effect.sync(() => runFailures.delete(job.value.id))
            : Effect.failCause(cause)
        )
      )
      runFailures.delete(job.value.id)
      ran = true
    }
  })

  return { run, drain, giveUp } as const
})

/** What the worker reads and writes. */
export const dependencies = Layer.mergeAll(
  Transactions.Transactions.Default,
  ContactImportsRepo.ContactImportsRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ContactsLimitLock.ContactsLimitLock.Default,
  ContactGroupsRepo.ContactGroupsRepo.Default,
  WorkspacesRepo.WorkspacesRepo.Default,
  EventsRepo.EventsRepo.Default
)

export const ContactImportWorkerLive = Singleton.make(
  "ContactImportWorker",
  // a failure outside a drain (the worker's setup) brings it back too (`Loops`)
  Loops.supervised(
    "contact import worker",
    Effect.gen(function*() {
      const worker = yield* make
      return yield* Loops.wakeable({
        wakeups: yield* Notifications.listen(Notifications.CONTACT_IMPORT_QUEUED),
        idle: IDLE_POLL,
        poll: POLL,
        failed: "contact import failed; retrying",
        step: () => worker.drain
      })
    }).pipe(Effect.scoped)
  )
).pipe(
  Layer.provide(dependencies)
)
