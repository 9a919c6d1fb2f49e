/**
 * Public identifiers: a resource prefix, `_`, then a 26-character ULID (time-ordered).
 * One prefix per kind of object.
 */
import { Clock, Effect, Schema } from "effect"
import { monotonicFactory } from "ulid"

export const IdPrefixes = {
  apiKey: "key",
  message: "msg",
  channel: "ch",
  workspace: "ws",
  webhookEndpoint: "wh",
  webhookDelivery: "whd",
  event: "evt",
  conversation: "cnv",
  contact: "cnt",
  user: "usr",
  sandboxSession: "sbx",
  template: "tpl",
  contactGroup: "grp",
  contactImport: "imp",
  note: "nte",
  session: "ses",
  media: "med",
  groupChat: "gch"
} as const

export type IdPrefix = typeof IdPrefixes[keyof typeof IdPrefixes]

const ULID = "[0-9A-HJKMNP-TV-Z]{26}"

/** Schema of one kind of id, e.g. `Id("msg")`; refuses any other shape. */
export const Id = <const P extends IdPrefix>(prefix: P) =>
  Schema.TemplateLiteral(Schema.Literal(`${prefix}_`), Schema.String).pipe(
    Schema.pattern(new RegExp(`^${prefix}_${ULID}$`), {
      message: () => `Expected an id of the form ${prefix}_ followed by 26 ULID characters`
    }),
    Schema.annotations({
      identifier: `${prefix}_id`,
      description: `\`${prefix}_\` followed by a 26-character ULID`,
      examples: [`${prefix}_01JD7X6F3Q9T2M5N8R4V0W1Y2Z` as `${P}_${string}`],
      // property tests generate ids from the schema: a template literal narrowed by a pattern
      // would otherwise be generated at random and filtered, which never matches
      arbitrary: () => (fc) => fc.stringMatching(new RegExp(`^${prefix}_${ULID}$`)).map((s) => s as `${P}_${string}`)
    })
  )

/**
 * A type guard for one kind of id, e.g. `isId("msg")`: whether a string is well formed, typing it
 * when it is. Same rule as `Id`, for a hot path that checks its own rows' ids without a decode.
 */
export const isId = <const P extends IdPrefix>(prefix: P) => {
  const form = new RegExp(`^${prefix}_${ULID}$`)
  return (s: string): s is `${P}_${string}` => form.test(s)
}

/** The refusal of an id reference that is not well formed: it names nothing (docs/API.md "Errors"). */
export const unknownIdMessage = (prefix: IdPrefix): string =>
  `Names nothing: expected an id of the form ${prefix}_ followed by 26 ULID characters`

const UNKNOWN_ID_MESSAGES = new Map(Object.values(IdPrefixes).map((p) => [unknownIdMessage(p), p] as const))

/** The prefix whose `IdRef` refused with `message`, if it is such a refusal. */
export const unknownIdPrefix = (message: string): IdPrefix | undefined => UNKNOWN_ID_MESSAGES.get(message)

/**
 * An id as a request names an object: a path segment, a body reference (`channel_id`), a filter
 * whose unknown value is a 404. Decodes like `Id`, but a string that is not well formed is
 * refused with `unknownIdMessage`, which the API answers with the resource's 404, the same as a
 * well-formed id that names nothing (docs/API.md "Errors": as Stripe answers "No such ..." for any id).
 * A value that is not a string stays 422.
 */
export const IdRef = <const P extends IdPrefix>(prefix: P) => {
  const form = new RegExp(`^${prefix}_${ULID}$`)
  return Schema.String.pipe(
    Schema.filter((s): s is `${P}_${string}` => form.test(s), {
      message: () => unknownIdMessage(prefix),
      description: `\`${prefix}_\` followed by a 26-character ULID; any other string names nothing (404)`,
      examples: [`${prefix}_01JD7X6F3Q9T2M5N8R4V0W1Y2Z` as `${P}_${string}`],
      jsonSchema: { pattern: form.source },
      arbitrary: () => (fc) => fc.stringMatching(form).map((s) => s as `${P}_${string}`)
    })
  )
}

/**
 * The random part of new ids: bytes from the platform's CSPRNG like ulid's default (a byte / 256
 * per character), drawn from a pooled buffer: ulid's default asks the CSPRNG for one byte per
 * character, 16 calls per id, which showed in the send path's profile.
 */
const randomPool = new Uint8Array(4096)
let randomAt = randomPool.length
const pooledRandom = () => {
  if (randomAt === randomPool.length) {
    globalThis.crypto.getRandomValues(randomPool)
    randomAt = 0
  }
  return randomPool[randomAt++]! / 256
}

/**
 * How far back a clock may step and ids still continue from the latest time seen (ulid's monotonic
 * factory never goes back in time): within this, ids keep their order across a small step of the
 * system clock; past it, the earlier time was another clock's (a clock set wrong and corrected, a
 * test's clock moved ahead), and ids go on from the clock's time. Otherwise every later id would
 * carry that far time, and land in a month of the history tables that does not exist yet.
 */
const MAX_CLOCK_STEP_BACK_MS = 60_000

let nextUlid = monotonicFactory(pooledRandom)
let latest = 0

/** A new id; its time part comes from Effect's Clock so tests can control it. */
export const newId = <const P extends IdPrefix>(prefix: P): Effect.Effect<`${P}_${string}`> =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    if (now > 0 && now < latest - MAX_CLOCK_STEP_BACK_MS) nextUlid = monotonicFactory(pooledRandom)
    latest = now > 0 ? now : Date.now()
    return `${prefix}_${nextUlid(now)}` as const
  })

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

/**
 * The least id of `prefix` made at epoch ms `ms` or later (`ms` clamped to 0): `prefix`, `_` and
 * the 10 time characters of a ULID (5 bits each, most significant first), nothing after. Ids of
 * one kind sort by their time part, so `id >= idFloor(prefix, t)` holds exactly the ids made at
 * `t` or later: the bounds of the history tables partitioned by id (packages/db `Partitions`,
 * docs/OPERATING.md "Partitions and retention").
 */
export const idFloor = <const P extends IdPrefix>(prefix: P, ms: number): `${P}_${string}` => {
  let t = Math.max(0, Math.floor(ms))
  let time = ""
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32]! + time
    t = Math.floor(t / 32)
  }
  return `${prefix}_${time}`
}

/** When an id (or an `idFloor`) was made: its time part as epoch ms; undefined if it has none. */
export const idTime = (id: string): number | undefined => {
  const match = /^[a-z]+_([0-9A-HJKMNP-TV-Z]{10})/.exec(id)
  if (match === null) return undefined
  let ms = 0
  for (const c of match[1]!) ms = ms * 32 + CROCKFORD.indexOf(c)
  return ms
}
