import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The contacts limit held under concurrency (docs/LIMITS.md "Plans"): `contacts_used_locked`
 * takes the workspace's contacts lock (a transaction-scoped advisory lock, `CONTACTS_LOCK` in
 * `ContactsLimitLock`), then counts what counts against the plan's `contacts` limit, the rule of
 * `ContactCtes.counted` repeated here (test/contactsLimitRace.test.ts checks that they agree).
 * A VOLATILE function runs each of its queries on a fresh snapshot (READ COMMITTED), so the count,
 * read after the lock, sees every contact a previous holder committed while the calling statement
 * waited: the send's one statement calls it only when it may create a counted contact. NULL when
 * the number has become a counted contact meanwhile (a concurrent send made it): no room needed,
 * the caller's next statement finds it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE FUNCTION contacts_used_locked(lock_class integer, for_workspace text, for_phone text)
    RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock(lock_class, hashtext(for_workspace));
      IF EXISTS (SELECT 1 FROM contacts c WHERE c.workspace_id = for_workspace AND c.phone_number = for_phone
        AND (NOT c.group_chat_only OR EXISTS (SELECT 1 FROM conversations v WHERE v.contact_id = c.id))) THEN
        RETURN NULL;
      END IF;
      RETURN (SELECT count(*)::int FROM contacts c WHERE c.workspace_id = for_workspace
        AND (NOT c.group_chat_only OR EXISTS (SELECT 1 FROM conversations v WHERE v.contact_id = c.id)));
    END $$`
})
