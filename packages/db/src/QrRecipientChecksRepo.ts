/**
 * WhatsApp's answers to a QR channel's recipient checks (is this number on WhatsApp?, asked before
 * the channel's first send to it; docs/LIMITS.md, "Number protection"): the channel's last answer
 * per number, counted by `GET .../qr/safety` (`QrSafetyRepo.health`), and the contact's own
 * `whatsapp` status (docs/API.md "Contacts"). Written by the runner that holds the channel's link.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { recordWhatsAppCheck } from "./ContactsRepo.js"
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
          ${recordWhatsAppCheck(sql, input)}`
      }, dieOnDatabaseError)

      return { record } as const
    })
  }
) {}
