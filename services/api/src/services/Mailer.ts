/**
 * Outgoing e-mail: SMTP (`nodemailer`) when `SMTP_URL` is set, otherwise written to the log for
 * development. `layerMemory` keeps mails for tests to read.
 */
import { Config, Context, Effect, Layer, Option, Redacted, Ref } from "effect"
import nodemailer from "nodemailer"

export interface Mail {
  readonly to: string
  readonly subject: string
  readonly text: string
}

export class Mailer extends Context.Tag("@switchboard/service-api/Mailer")<Mailer, {
  readonly send: (mail: Mail) => Effect.Effect<void>
}>() {}

export const layerFromEnv = Layer.effect(
  Mailer,
  Effect.gen(function*() {
    const url = yield* Config.option(Config.redacted("SMTP_URL"))
    const from = yield* Config.string("MAIL_FROM").pipe(Config.withDefault("Switchboard <no-reply@localhost>"))
    if (Option.isNone(url) || Redacted.value(url.value) === "") {
      return {
        send: (mail) =>
          Effect.logInfo("e-mail (SMTP_URL not set; development delivery to the log)").pipe(
            Effect.annotateLogs({ mail_to: mail.to, mail_subject: mail.subject, mail_text: mail.text })
          )
      }
    }
    const transport = nodemailer.createTransport(Redacted.value(url.value))
    return {
      send: (mail) =>
        Effect.tryPromise(() => transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text })).pipe(
          Effect.catchAll((error) =>
            Effect.logError("e-mail not sent").pipe(Effect.annotateLogs({ mail_to: mail.to, error: String(error) }))
          ),
          Effect.asVoid
        )
    }
  })
).pipe(Layer.orDie)

/** Keeps every mail in memory; `sent` reads them (tests). */
export class MailOutbox
  extends Context.Tag("@switchboard/service-api/MailOutbox")<MailOutbox, Ref.Ref<ReadonlyArray<Mail>>>()
{}

export const layerMemory = Layer.effectContext(Effect.gen(function*() {
  const outbox = yield* Ref.make<ReadonlyArray<Mail>>([])
  return Context.make(MailOutbox, outbox).pipe(
    Context.add(Mailer, { send: (mail: Mail) => Ref.update(outbox, (all) => [...all, mail]) })
  )
}))
