/** QR pairing of a channel: a signed-in user only, never an API key. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import {
  ChannelStateMachine,
  Errors,
  Ids,
  QrConnectionError as DomainQrConnectionError,
  Schemas
} from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, rateLimited, requireScopes, sessionOnly } from "./Security.js"

/**
 * Why the channel's last attempt could not reach WhatsApp: the wire form of the domain's
 * `QrConnectionError` (its fields and descriptions; `next_attempt_at` a timestamp), made by `fromDomain`.
 */
export class QrConnectionError extends Schema.Class<QrConnectionError>("QrConnectionError")({
  reason: DomainQrConnectionError.QrConnectionError.fields.reason,
  message: DomainQrConnectionError.QrConnectionError.fields.message,
  failures: DomainQrConnectionError.QrConnectionError.fields.failures,
  next_attempt_at: Schema.NullOr(Schemas.Timestamp).annotations({
    description: "When the next attempt starts; `null` once the channel gave up (it is then `disconnected`)"
  })
}, {
  description:
    "Why the last attempt could not reach WhatsApp (reasons and retry rules: docs/STATE-MACHINES.md, \"QR connection errors\")"
}) {
  /** The API's form of a connection error; `null` for none. */
  static fromDomain(error: DomainQrConnectionError.QrConnectionError | null): QrConnectionError | null {
    return error === null ? null : new QrConnectionError({
      reason: error.reason,
      message: error.message,
      failures: error.failures,
      next_attempt_at: error.nextAttemptAt === null ? null : Schemas.toTimestamp(error.nextAttemptAt)
    })
  }
}

/** Where pairing stands; the QR code itself only travels on the stream. */
export class PairingStatus extends Schema.Class<PairingStatus>("PairingStatus")({
  channel_id: Schema.String,
  status: ChannelStateMachine.ChannelStatus,
  /** a QR code is showing now (read it from `qr/stream`) */
  qr_available: Schema.Boolean,
  qr_expires_at: Schema.NullOr(Schemas.Timestamp),
  phone_number: Schema.NullOr(Schema.String),
  pairing_started_at: Schema.NullOr(Schemas.Timestamp),
  /** added later (like the two below): optional, so clients built before it still decode older answers */
  pairing_code_available: Schema.optional(Schema.Boolean.annotations({
    description:
      "A pairing code shows now instead of a QR code (`qr/start` with `method: \"code\"`); read it from `qr/stream`, never here"
  })),
  pairing_code_expires_at: Schema.optional(
    Schema.NullOr(Schemas.Timestamp).annotations({
      description: "When the pairing code showing stops linking; `null` when none shows"
    })
  ),
  connection_error: Schema.optional(
    Schema.NullOr(QrConnectionError).annotations({
      description:
        "Why the last attempt could not reach WhatsApp (`reason`, `message` saying what to check); `null` when nothing failed since WhatsApp last answered or pairing restarted"
    })
  )
}) {}

/** `text/event-stream` */
export const EventStream = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })
)

const ChannelPath = Schema.Struct({ channelId: Ids.IdRef("ch") })

/** The frames of `qr/stream`, every one of them (docs/QR-CHANNELS.md "QR channels"): no other `event:` name is sent. */
export const QR_STREAM_EVENTS = ["snapshot", "qr.updated", "qr.state", "qr.expired"] as const

/** Where a QR channel stands against its rolling 24 h safety cap. */
export class QrSafetyUsage extends Schema.Class<QrSafetyUsage>("QrSafetyUsage")({
  channel_id: Schema.String,
  /** the cap: 200, or lower where an operator lowered it */
  limit: Schema.Number,
  /** messages handed to WhatsApp in the last 24 h */
  sent_24h: Schema.Number,
  /** messages accepted and not handed over yet (they count against the cap too) */
  queued: Schema.Number,
  /** how many more sends are accepted now */
  remaining: Schema.Number,
  sends_24h: Schema.Struct({
    new_contacts: Schema.Number.annotations({
      description: "Messages accepted in the last 24 h to contacts who never wrote to the channel (new chats)"
    }),
    existing_contacts: Schema.Number.annotations({
      description: "Messages accepted in the last 24 h to contacts who wrote to the channel (replies)"
    })
  }).annotations({
    description:
      "Sends in the same rolling 24 h as the cap, by recipient: new chats are what warm-up and WhatsApp's restrictions limit (cancelled and expired messages not counted)"
  }),
  recipient_checks_24h: Schema.Struct({
    on_whatsapp: Schema.Number.annotations({ description: "Numbers WhatsApp confirmed in the last 24 h" }),
    not_on_whatsapp: Schema.Number.annotations({
      description: "Numbers WhatsApp said are not on it in the last 24 h (their sends failed `not_on_whatsapp`)"
    })
  }).annotations({
    description:
      "Numbers checked before the channel's first send to them, by WhatsApp's answer, in the last 24 h (each number once, at its latest check); the contact shows the answer in `whatsapp.status`"
  }),
  /** what WhatsApp reported on this number: while either holds, sends to new contacts are refused */
  restrictions: Schema.Struct({
    timelock_until: Schema.NullOr(Schema.String).annotations({
      description:
        "WhatsApp's reach-out timelock on new chats ends then (429 `details.reason = timelock` until); null: none"
    }),
    new_chat_quota: Schema.NullOr(Schema.Struct({
      total: Schema.Number,
      used: Schema.Number,
      cycle_ends_at: Schema.NullOr(Schema.String),
      reported_at: Schema.String
    })).annotations({
      description:
        "WhatsApp's new-chat quota as last reported (429 `details.reason = new_chat_cap` once used up, until the cycle ends)"
    }),
    last_signal: Schema.NullOr(Schema.Struct({
      signal: ChannelStateMachine.QrRestrictionReason,
      at: Schemas.Timestamp
    })).annotations({
      description:
        "WhatsApp's last restriction signal on the number and when it came (`account_restricted`: a 463 refusal, `reachout_timelocked`, `new_chats_capped`, `rate_limited`: a 429, `restriction_lifted`); null: none since the channel was created"
    }),
    held_by_timelock: Schema.Number.annotations({
      description:
        "Queued messages to new contacts a reach-out timelock holds now (they go when it ends); 0 without a timelock"
    })
  }),
  /** the warm-up of a newly linked number: sends to new contacts ramp up over its first 14 days */
  warm_up: Schema.Struct({
    status: Schema.Literal("warming_up", "complete", "off").annotations({
      description:
        "`warming_up` during the first `days` after the number was linked; `complete` after; `off` when an operator switched it off or the link time is unknown"
    }),
    override: Schema.Literal("none", "off", "capped").annotations({
      description: "What an operator set for this channel: nothing (the default ramp), off, or a lower daily ceiling"
    }),
    linked_at: Schema.NullOr(Schema.String).annotations({ description: "When the number was linked" }),
    day: Schema.NullOr(Schema.Number).annotations({ description: "Day of the warm-up (1 on the day of the link)" }),
    days: Schema.Number.annotations({ description: "How many days a warm-up lasts (14)" }),
    limit: Schema.NullOr(Schema.Number).annotations({
      description: "Sends to new contacts (recipients who never wrote to the channel) accepted per rolling 24 h today"
    }),
    new_contacts_24h: Schema.NullOr(Schema.Number).annotations({
      description: "Sends to new contacts accepted in the last 24 h"
    }),
    remaining: Schema.NullOr(Schema.Number).annotations({
      description: "How many more sends to new contacts are accepted now"
    }),
    next_day_at: Schema.NullOr(Schema.String).annotations({
      description: "When the next day of the warm-up, with its higher cap, begins"
    }),
    ends_at: Schema.NullOr(Schema.String).annotations({ description: "When the warm-up ends (or ended)" })
  })
}) {}

/** `qr/start`'s optional body: how to link (docs/QR-CHANNELS.md "Linking with a code"). */
export const StartPairingRequest = Schemas.StrictStruct({
  method: Schema.optional(
    Schema.Literal("qr", "code").annotations({
      description:
        "`qr` (the default): QR codes to scan; `code`: WhatsApp's 8-character pairing code for `phone_number`, typed on the phone"
    })
  ),
  phone_number: Schema.optional(Schemas.E164.annotations({
    description: "The number to link, E.164; required with `method: \"code\"`, refused without it"
  }))
}).annotations({ identifier: "StartPairingRequest" })

const NOT_QR = "Not a `qr` channel: 409 `CHANNEL_CAPABILITY_UNAVAILABLE` with `details.reason = not_a_qr_channel`."

/** `qr/start` and `qr/logout`: a command on the channel's link, answered with the pairing status. */
const pairingCommand = <Name extends string>(name: Name, action: "start" | "logout") =>
  HttpApiEndpoint.post(name, `/v1/channels/:channelId/qr/${action}`)
    .setPath(ChannelPath)
    .addSuccess(PairingStatus)
    .addError(Errors.ChannelNotFound)
    .addError(Errors.ChannelCapabilityUnavailable)
    .addError(Errors.Conflict)
    .addError(Errors.ServiceUnavailable)

export class QrPairingApi extends HttpApiGroup.make("qrPairing")
  .add(
    pairingCommand("start", "start")
      // an empty body (read as null) is the same as `{}`: QR codes, as before the body existed
      .setPayload(Schema.NullOr(StartPairingRequest))
      .annotate(
        OpenApi.Description,
        `Begins or restarts pairing from any status but archived and suspended (409 \`CONFLICT\` with \`details.reason\` \`channel_archived\` / \`channel_suspended\`). A runner produces the QR codes: watch them on \`qr/stream\`. With \`{"method": "code", "phone_number": "+4915112345678"}\` WhatsApp's 8-character pairing code for that number replaces them (the stream's \`pairing_code\`; the user types it on the phone under Linked devices, "Link with phone number instead"); \`method: "code"\` without \`phone_number\`, or a \`phone_number\` with \`method: "qr"\`, is 422 \`VALIDATION_ERROR\`. The code expires like a QR code (\`qr.expired\`, status_reason \`pairing_code_expired\`); a number WhatsApp does not link ends the pairing with status_reason \`phone_number_refused\`. No body (or \`{}\`) is \`method: "qr"\`. A channel with a stored link logs in again without a code. ${NOT_QR} 503 when no runner answers.`
      )
      .pipe(requireScopes("channels.manage"), sessionOnly, rateLimited("qr_start"))
  )
  .add(
    HttpApiEndpoint.get("safety", "/v1/channels/:channelId/qr/safety")
      .setPath(ChannelPath)
      .addSuccess(QrSafetyUsage)
      .addError(Errors.ChannelNotFound)
      .addError(Errors.ChannelCapabilityUnavailable)
      .annotate(
        OpenApi.Description,
        `Sent in the rolling 24 h plus queued, against the channel's safety cap: a send is refused (429 \`QR_SAFETY_LIMIT_REACHED\`, \`details.reason = daily_cap\`) once \`remaining\` is 0. \`warm_up\`: during the first 14 days after the number was linked, sends to new contacts (recipients who never wrote to the channel) are capped per rolling 24 h by a ramp (20 on day 1 up to 200 on day 14; docs/LIMITS.md "Number protection"), refused with 429 \`QR_SAFETY_LIMIT_REACHED\` and \`details.reason = warm_up\` once \`warm_up.remaining\` is 0. The number's health in the same rolling 24 h (docs/LIMITS.md "Number protection", its health table): \`sends_24h\` (new vs existing contacts), \`recipient_checks_24h\` (WhatsApp's answers on whether numbers are on it; the contact shows its own in \`whatsapp\`), \`restrictions.last_signal\` (WhatsApp's last restriction signal and when) and \`restrictions.held_by_timelock\`. A signed-in user only, like every route under \`qr/\` (an API key is 403 \`FORBIDDEN\`). ${NOT_QR}`
      )
      .pipe(requireScopes("channels.read"), sessionOnly)
  )
  .add(
    HttpApiEndpoint.get("status", "/v1/channels/:channelId/qr/status")
      .setPath(ChannelPath)
      .addSuccess(PairingStatus)
      .addError(Errors.ChannelNotFound)
      .addError(Errors.ChannelCapabilityUnavailable)
      .annotate(
        OpenApi.Description,
        `Pairing status: \`qr_available\` says whether a code is showing; the code itself is never here. \`connection_error\` says why the last attempt could not reach WhatsApp (a \`reason\` and a \`message\` that says what to check), \`null\` when nothing failed. ${NOT_QR}`
      )
      .pipe(requireScopes("channels.manage"), sessionOnly)
  )
  .add(
    HttpApiEndpoint.get("stream", "/v1/channels/:channelId/qr/stream")
      .setPath(ChannelPath)
      .addSuccess(EventStream)
      .addError(Errors.ChannelNotFound)
      .addError(Errors.ChannelCapabilityUnavailable)
      .addError(Errors.Conflict)
      .addError(Errors.ServiceUnavailable)
      .annotate(
        OpenApi.Description,
        [
          `Server-sent events, exactly ${QR_STREAM_EVENTS.length} kinds of frame (\`event:\` name, \`data:\` JSON):`,
          "`snapshot` (always first) `{channel_id, status, qr_available, qr, qr_expires_at, pairing_code_available, pairing_code, pairing_code_expires_at, phone_number, connection_error}`;",
          "`qr.updated` `{channel_id, qr, qr_expires_at, pairing_code, pairing_code_expires_at, sequence}` (linking by code, `qr/start` with `method: \"code\"`: `qr` is `null` and `pairing_code` the 8 characters to type on the phone; else `pairing_code` is `null`); `qr.state` `{channel_id, from_status, to_status, reason, connection_error}`;",
          "`qr.expired` `{channel_id}`.",
          "Each attempt that could not reach WhatsApp is a `qr.state` that changes no status: `from_status` = `to_status`, `reason: null`, and `connection_error` `{reason, message, failures, next_attempt_at}` (`QrConnectionError`; `null` when none).",
          "After `qr/start`, until a link first opens, 3 such attempts in a row (the default of `QR_CONNECT_MAX_FAILURES`) end in `qr.state` to `disconnected` (`reconnect_budget_exhausted`, with the `connection_error`). A `: heartbeat` comment every 15 s.",
          "The stream closes after `qr.state` to `connected` or to `disconnected`, after `qr.expired`, after 5 minutes, or when the server shuts down; a stream cut by a shutdown ends with an SSE `retry:` field (0.5 to 2 s) and no event, then closes: an `EventSource` reconnects by itself after it (another api node answers).",
          "Resuming: a reconnecting client (with or without `Last-Event-ID`) gets a fresh `snapshot` carrying the code showing now, so nothing it needs is lost; `qr.updated` frames carry `id:` = the code's sequence.",
          `Archived or suspended: 409 \`CONFLICT\`. ${NOT_QR}`
        ].join(" ")
      )
      .pipe(requireScopes("channels.manage"), sessionOnly)
  )
  .add(
    pairingCommand("logout", "logout")
      .annotate(
        OpenApi.Description,
        `Unlinks the device at WhatsApp (when linked), forgets the stored link and leaves the channel \`disconnected\`. ${NOT_QR}`
      )
      .pipe(requireScopes("channels.manage"), sessionOnly)
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "QR pairing")
{}
