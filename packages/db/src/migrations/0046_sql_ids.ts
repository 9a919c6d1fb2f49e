import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The random part of an id made inside a statement (docs/ARCHITECTURE.md "Architecture": an event's webhook
 * deliveries are written by the same statement as the change they report, one per subscribed
 * endpoint, so their ids cannot all come from the application): 16 ULID characters (Crockford
 * base 32, 5 bits each) from the bytes of a fresh `gen_random_uuid()` (the server's CSPRNG).
 * Prefixed with a kind and the 10 time characters of a ULID made by the application, the result
 * has the shape of every other id. VOLATILE, so each row of a statement gets its own.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE FUNCTION ulid_random_part() RETURNS text VOLATILE LANGUAGE sql AS $$
    SELECT string_agg(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', get_byte(b, i) % 32 + 1, 1), '' ORDER BY i)
    FROM (SELECT uuid_send(gen_random_uuid()) AS b) r, generate_series(0, 15) AS i
  $$`
})
