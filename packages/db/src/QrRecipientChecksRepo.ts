/**
 * WhatsApp's answers to a QR channel's recipient checks (is this number on WhatsApp?, asked before
 * the channel's first send to it; docs/LIMITS.md, "Number protection"): the channel's last answer
 * per number, counted by `GET .../qr/safety` (`QrSafetyRepo.health`), and the contact's own
 * `whatsapp` status (docs/API.md "Contacts"). Written by the runner that holds the channel's link.
 * The contact's `whatsapp_status` and `whatsapp_checked_at` are written here only (migration 0110);
 * `ContactsRepo` reads them, and clears them when the contact's number changes.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { dieOnDatabaseError } from "./Rows.js"

export class QrRecipientChecksRepo extends Effect.Service<QrRecipientChecksRepo>()(
  "@switchboard/db/QrRecipientChecksRepo",
  {
    effect: Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /**
       * One statement: the channel's answer for the number, and the workspace's contact with that
       * number (when one exists; an older answer never overwrites a newer one).
       */
      const record = Effect.fn("QrRecipientChecksRepo.record")(function*(input: {
        readonly channelId: string
        /** E.164 */
        readonly phone: string
        readonly onWhatsApp: boolean
        readonly at: string
      }) {
        yield* sql`WITH checked AS (
            INSERT INTO qr_recipient_checks (channel_id, phone_number, on_whatsapp, checked_at)
            VALUES (${input.channelId}, ${input.phone}, ${input.onWhatsApp}, ${input.at})
            ON CONFLICT (channel_id, phone_number) DO UPDATE
              SET on_whatsapp = EXCLUDED.on_whatsapp, checked_at = EXCLUDED.checked_at
              WHERE qr_recipient_checks.checked_at <= EXCLUDED.checked_at
          )
          UPDATE contacts SET whatsapp_status = ${input.onWhatsApp ? "on_whatsapp" : "not_on_whatsapp"},
              whatsapp_checked_at = ${input.at}
            WHERE workspace_id = (SELECT workspace_id FROM channels WHERE id = ${input.channelId})
              AND phone_number = ${input.phone}
              AND (whatsapp_checked_at IS NULL OR whatsapp_checked_at <= ${input.at})`
      }, dieOnDatabaseError)

      return { record } as const
    })
  }
) {}
