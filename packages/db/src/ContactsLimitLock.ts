/**
 * The workspace's contacts lock, which keeps the plan's `contacts` limit exact when its doors race
 * (docs/LIMITS.md "Plans"): a transaction-scoped advisory lock
 * (`pg_advisory_xact_lock(CONTACTS_LOCK, hashtext(workspace_id))`, held to commit) that every door
 * that may create a counted contact under a limit takes before it counts: a send to a new number
 * (inside its one statement, `usedLocked`), `POST /v1/contacts` and an import's batch (`lock`). The
 * count each then reads includes every counted contact committed before it, so with k places left
 * exactly k get in. Inbound senders take no lock: they count whatever the limit.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { dieOnDatabaseError } from "./Rows.js"

/** The lock's class id (the two-key space, beside the monthly quota's 4243). */
export const CONTACTS_LOCK = 4244

/**
 * How many contacts count against the limit (`ContactCtes.counted`), read under the workspace's
 * contacts lock, taken here and held to commit, on a snapshot newer than the calling statement's
 * (the database function of migration 0193: a VOLATILE function's queries each take a fresh
 * snapshot); NULL when `phone` has become a counted contact since that statement began (a
 * concurrent send made it: no room needed). Only where a counted contact may be created.
 */
export const usedLocked = (sql: SqlClient.SqlClient, workspaceId: string, phone: string) =>
  sql`contacts_used_locked(${CONTACTS_LOCK}, ${workspaceId}, ${phone})`

export class ContactsLimitLock extends Effect.Service<ContactsLimitLock>()("@switchboard/db/ContactsLimitLock", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Takes the workspace's contacts lock until the transaction ends: inside it, before the count. */
    const lock = Effect.fn("ContactsLimitLock.lock")(function*(workspaceId: string) {
      yield* sql`SELECT pg_advisory_xact_lock(${CONTACTS_LOCK}, hashtext(${workspaceId}))`
    }, dieOnDatabaseError)

    return { lock } as const
  })
}) {}
