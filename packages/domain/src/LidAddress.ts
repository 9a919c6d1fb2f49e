/**
 * A send's recipient is a phone number (E.164), or, for a contact WhatsApp named by LID alone
 * (docs/API.md "Contacts"), that LID as WhatsApp's jid: `<lid>@lid`. Only a conversation reply on
 * a QR channel addresses a LID (`POST /v1/messages` takes numbers); the message's `to` shows it.
 */

/** `123456789012345` -> `123456789012345@lid` */
export const lidAddress = (lid: string): string => `${lid}@lid`

/** The LID a recipient names (`<lid>@lid`), or `undefined` for a phone number. */
export const addressedLid = (to: string): string | undefined => {
  const match = /^(\d{1,20})@lid$/.exec(to)
  return match ? match[1] : undefined
}
