/**
 * What the sandbox's simulated group chats accept (docs/API.md "Group chats"), apart from the
 * `Sandbox` service that keeps them: who may be a participant or an admin, the group chat a
 * simulated WhatsApp would report, and who may write in it. Pure; each refusal a 422 naming the
 * member at fault, never its value.
 */
import { Errors, GroupChats, type SandboxInbound } from "@switchboard/domain"
import { Effect } from "effect"
import { randomInt } from "node:crypto"

/**
 * The participants of a new simulated group chat (each once, in order) and its admins; refused
 * when one is unknown to the session's network (`knownTo`: verified, or a magic number) or an
 * admin is not a participant.
 */
export const participantsOf = (
  input: SandboxInbound.SandboxGroupChatRequest,
  knownTo: (phone: string) => boolean
): Effect.Effect<
  { readonly participants: ReadonlyArray<string>; readonly admins: ReadonlySet<string> },
  Errors.ValidationError
> =>
  Effect.gen(function*() {
    const participants = [...new Set(input.participants)]
    const unknown = participants.findIndex((phone) => !knownTo(phone))
    if (unknown >= 0) {
      return yield* new Errors.ValidationError({
        message: "Only verified recipients (or magic numbers) can be participants",
        details: {
          reason: "recipient_not_verified",
          issues: [{
            path: ["participants", input.participants.indexOf(participants[unknown]!)],
            message: "Verify this number first"
          }]
        }
      })
    }
    const strayAdmin = (input.admins ?? []).findIndex((phone) => !participants.includes(phone))
    if (strayAdmin >= 0) {
      return yield* new Errors.ValidationError({
        message: "An admin must be one of the participants",
        details: { issues: [{ path: ["admins", strayAdmin], message: "Not a participant" }] }
      })
    }
    return { participants, admins: new Set(input.admins ?? []) }
  })

/**
 * The group chat a simulated WhatsApp reports: a new group id in WhatsApp's shape (120363 and
 * twelve more digits); the first participant created it (`superadmin`).
 */
export const simulatedGroupChat = (
  input: SandboxInbound.SandboxGroupChatRequest,
  participants: ReadonlyArray<string>,
  admins: ReadonlySet<string>
): GroupChats.ProviderGroupChat => ({
  whatsappGroupId: `120363${String(randomInt(0, 1_000_000)).padStart(6, "0")}${
    String(randomInt(0, 1_000_000)).padStart(6, "0")
  }`,
  subject: input.subject,
  description: input.description ?? null,
  announceOnly: input.announce_only ?? false,
  isAdmin: input.is_admin ?? false,
  participants: participants.map((phoneNumber, i) => ({
    phoneNumber,
    whatsappLid: null,
    role: i === 0 ? "superadmin" as const : admins.has(phoneNumber) ? "admin" as const : "member" as const
  }))
})

/**
 * Whether a simulated message may be written in `chat`: the session's number is still in it,
 * `from` and what it mentions are participants, and only admins write in an announce-only one.
 */
export const checkInboundWriter = (
  chat: GroupChats.GroupChatDetail,
  input: SandboxInbound.SandboxInboundRequest
): Effect.Effect<{ readonly whatsappGroupId: string }, Errors.ValidationError> =>
  Effect.gen(function*() {
    const refuse = (reason: string, path: ReadonlyArray<string | number>, message: string) =>
      new Errors.ValidationError({ message, details: { reason, issues: [{ path, message }] } })
    if (!chat.is_participant) {
      return yield* refuse("not_a_participant", ["group_chat_id"], "The session's number left this group chat")
    }
    const writer = chat.participants.find((p) => p.phone_number === input.from)
    if (writer === undefined) {
      return yield* refuse("not_a_participant", ["from"], "Not a participant of this group chat")
    }
    if (chat.announce_only && writer.role === "member") {
      return yield* refuse("group_chat_announce_only", ["from"], "Only admins write in this group chat")
    }
    const stray = (input.mentions ?? []).findIndex((phone) => !chat.participants.some((p) => p.phone_number === phone))
    if (stray >= 0) return yield* refuse("not_a_participant", ["mentions", stray], "Not a participant")
    return { whatsappGroupId: chat.whatsapp_group_id }
  })
