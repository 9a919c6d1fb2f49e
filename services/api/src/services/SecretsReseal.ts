/**
 * The last step of a `SECRETS_ENCRYPTION_KEY` rotation (`npm run admin -- reseal-secrets`): every
 * secret at rest (webhook endpoint secrets and previous secrets, every row of `qr_auth_state`) is
 * sealed again under the current key, so the previous keys can be dropped afterwards.
 *
 * The tables are read in batches in key order; each row is written only while it still holds what
 * was read (compare-and-set), so a value a running process rewrote meanwhile (a secret rotation, a
 * Baileys key update) is never overwritten: the row is read again and handled anew. A value that
 * no key opens is counted as `failed` and left exactly as it is (never deleted).
 */
import { WebhookEndpointsRepo } from "@switchboard/db"
import { SecretBox, type SecretsConfig } from "@switchboard/infra"
import { QrAuthStateRepo } from "@switchboard/providers/contract"
import { Effect, Option } from "effect"

export interface ResealCounts {
  /** webhook endpoint secrets (current and previous) sealed again under the current key */
  readonly webhook_secrets: number
  /** `qr_auth_state` rows sealed under the current key (previous key, or plaintext of old versions) */
  readonly qr_auth_rows: number
  /** values already sealed under the current key */
  readonly already_current: number
  /** values no key opens (another key, corrupt): left as they are */
  readonly failed: number
}

/** Rows per read. */
const BATCH = 500

/** Reads of one row that changed under us before it is counted as failed (run the command again). */
const MAX_TRIES = 5

type Verdict =
  | { readonly _tag: "current" }
  | { readonly _tag: "failed" }
  | { readonly _tag: "resealed"; readonly value: string }

const CURRENT: Verdict = { _tag: "current" }
const FAILED: Verdict = { _tag: "failed" }

/**
 * What to store instead of `value`; `plaintext`: whether a value not in the sealed format is
 * data to seal (QR rows of earlier versions) rather than a broken value.
 */
const judge = (keyring: SecretsConfig.Keyring, value: string, plaintext: boolean): Verdict => {
  if (!SecretBox.isSealed(value)) return plaintext ? { _tag: "resealed", value: keyring.seal(value) } : FAILED
  try {
    const opened = keyring.openWithKey(value)
    return opened.current ? CURRENT : { _tag: "resealed", value: keyring.seal(opened.plaintext) }
  } catch {
    return FAILED
  }
}

export class SecretsReseal extends Effect.Service<SecretsReseal>()("@switchboard/service-api/SecretsReseal", {
  effect: Effect.gen(function*() {
    const endpoints = yield* WebhookEndpointsRepo.WebhookEndpointsRepo
    const qrAuth = yield* QrAuthStateRepo.QrAuthStateRepo

    const run = Effect.fn("SecretsReseal.run")(function*(keyring: SecretsConfig.Keyring, batchSize: number = BATCH) {
      const counts = { webhook_secrets: 0, qr_auth_rows: 0, already_current: 0, failed: 0 }
      const tally = (verdicts: ReadonlyArray<Verdict>, resealedInto: "webhook_secrets" | "qr_auth_rows") => {
        for (const v of verdicts) {
          if (v._tag === "current") counts.already_current++
          else if (v._tag === "failed") counts.failed++
          else counts[resealedInto]++
        }
      }

      const endpoint = (first: WebhookEndpointsRepo.SealedSecrets) =>
        Effect.gen(function*() {
          let row = first
          for (let attempt = 1;; attempt++) {
            const secret = judge(keyring, row.secret_sealed, false)
            const previous = row.previous_secret_sealed === null
              ? undefined
              : judge(keyring, row.previous_secret_sealed, false)
            const verdicts = previous === undefined ? [secret] : [secret, previous]
            if (verdicts.every((v) => v._tag !== "resealed")) return tally(verdicts, "webhook_secrets")
            const written = yield* endpoints.replaceSecrets(row, {
              secret_sealed: secret._tag === "resealed" ? secret.value : row.secret_sealed,
              previous_secret_sealed: previous?._tag === "resealed" ? previous.value : row.previous_secret_sealed
            })
            if (written) return tally(verdicts, "webhook_secrets")
            const now = yield* endpoints.readSecrets(row.id)
            if (Option.isNone(now)) return
            if (attempt >= MAX_TRIES) return tally(verdicts.map(() => FAILED), "webhook_secrets")
            row = now.value
          }
        })

      const qrRow = (first: QrAuthStateRepo.QrAuthRow) =>
        Effect.gen(function*() {
          let row = first
          for (let attempt = 1;; attempt++) {
            const verdict = judge(keyring, row.value, true)
            if (verdict._tag !== "resealed") return tally([verdict], "qr_auth_rows")
            if (yield* qrAuth.replaceValue(row, verdict.value)) return tally([verdict], "qr_auth_rows")
            const now = yield* qrAuth.readValue(row)
            // deleted meanwhile (a logout, Baileys dropping a key): nothing left to seal
            if (Option.isNone(now)) return
            if (attempt >= MAX_TRIES) return tally([FAILED], "qr_auth_rows")
            row = { ...row, value: now.value }
          }
        })

      let afterEndpoint = Option.none<string>()
      for (;;) {
        const rows = yield* endpoints.scanSecrets(afterEndpoint, batchSize)
        for (const row of rows) yield* endpoint(row)
        if (rows.length < batchSize) break
        afterEndpoint = Option.some(rows[rows.length - 1]!.id)
      }

      let afterQr = Option.none<QrAuthStateRepo.QrAuthRow>()
      for (;;) {
        const rows = yield* qrAuth.scan(afterQr, batchSize)
        for (const row of rows) yield* qrRow(row)
        if (rows.length < batchSize) break
        afterQr = Option.some(rows[rows.length - 1]!)
      }

      yield* Effect.logInfo("secrets at rest re-sealed").pipe(Effect.annotateLogs(counts))
      return counts satisfies ResealCounts as ResealCounts
    })

    return { run } as const
  }),
  dependencies: [WebhookEndpointsRepo.WebhookEndpointsRepo.Default, QrAuthStateRepo.QrAuthStateRepo.Default]
}) {}
