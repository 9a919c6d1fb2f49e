/** Small helpers shared by repositories. */

/** A timestamptz column (a `Date` from the driver) as the wire's ISO string. */
export const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString()

export const isoOrNull = (value: Date | string | null | undefined): string | null =>
  value === null || value === undefined ? null : iso(value)

/** Whether a failure is Postgres refusing a duplicate (unique_violation). */
export const isUniqueViolation = (error: unknown): boolean => {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause
  return cause?.code === "23505"
}
