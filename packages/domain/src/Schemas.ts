/** Shared request and response building blocks. */
import { DateTime, Schema } from "effect"

/**
 * A request body struct that refuses unknown members (`onExcessProperty: "error"` applies to
 * this node and every node below it, so nested structs are strict too).
 */
export const StrictStruct = <F extends Schema.Struct.Fields>(fields: F) =>
  Schema.Struct(fields).annotations({
    parseOptions: { onExcessProperty: "error" },
    // a value that is no object at all: what a client reads (not the schema's identifier, such as
    // "Expected StartPairingRequest"); an issue inside the object keeps its own message
    message: () => "Expected an object"
  })

/** ISO 8601 UTC with milliseconds, e.g. `2026-11-22T10:40:43.123Z`. */
export const Timestamp = Schema.String.annotations({
  identifier: "Timestamp",
  description: "ISO 8601 UTC timestamp with millisecond precision",
  examples: ["2026-11-22T10:40:43.123Z"]
})

export const toTimestamp = (date: Date | number | DateTime.Utc): string =>
  DateTime.isDateTime(date) ? DateTime.formatIso(date) : new Date(date).toISOString()

/** E.164 phone number: `+`, country code, up to 15 digits. */
export const E164 = Schema.String.pipe(
  Schema.pattern(/^\+[1-9]\d{6,14}$/, { message: () => "Expected an E.164 phone number such as +4915112345678" }),
  Schema.annotations({ identifier: "E164", description: "Phone number in E.164 format", examples: ["+4915112345678"] })
)
