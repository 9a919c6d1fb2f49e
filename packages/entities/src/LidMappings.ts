/**
 * What WhatsApp reveals of a LID (its private id of a user) and the phone number behind it, on one
 * channel (docs/API.md "Contacts"): the mapping is kept durably, and the workspace's contacts follow
 * it in the same transaction:
 * - a contact known by the LID alone, and no contact with the number: it gets the number (its
 *   messages show it as `from`);
 * - a contact with the number, and none with the LID: it gets the LID;
 * - both: the LID contact is merged into the number's contact (one contact, one conversation per
 *   channel, history kept), and `contact.updated` names the merge (`merged_contact_id`).
 * The QR connection reports mappings (`ProviderEvent` `LidMapped`: Baileys' `remoteJidAlt`,
 * `lid-mapping.update`); an inbound message that names both does too.
 */
import { ChannelsRepo, EventsRepo, LidRepo, Transactions } from "@switchboard/db"
import { type Contacts, Events, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"

const updated = (
  id: Contacts.Contact["id"],
  changes: { merged?: Contacts.Contact["id"]; changed?: ReadonlyArray<"phone_number" | "whatsapp_lid"> }
) =>
  Events.DomainEvent.make("contact.updated", {
    object: "contact",
    object_id: id,
    contact_id: id,
    ...(changes.merged === undefined ? {} : { merged_contact_id: changes.merged }),
    ...(changes.changed === undefined ? {} : { changed: changes.changed })
  })

export class LidMappings extends Effect.Service<LidMappings>()("@switchboard/entities/LidMappings", {
  effect: Effect.gen(function*() {
    const lids = yield* LidRepo.LidRepo
    const channels = yield* ChannelsRepo.ChannelsRepo
    const events = yield* EventsRepo.EventsRepo
    const transactions = yield* Transactions.Transactions

    /** Stores that `lid` is `phone` (E.164) on the channel, and merges or completes contacts. */
    const learn = Effect.fn("LidMappings.learn")(function*(channelId: string, lid: string, phone: string) {
      const found = yield* channels.findById(channelId)
      if (Option.isNone(found)) return
      const workspaceId = found.value.channel.workspace_id
      const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
      yield* transactions.run(Effect.gen(function*() {
        yield* lids.remember(channelId, lid, phone, now)
        const byLid = yield* lids.byLid(workspaceId, lid)
        const byPhone = yield* lids.byPhone(workspaceId, phone)
        const emit = (id: Contacts.Contact["id"], changes: Parameters<typeof updated>[1]) =>
          events.append({ workspaceId, event: updated(id, changes), occurredAt: now })
        if (Option.isNone(byLid)) {
          if (Option.isSome(byPhone) && byPhone.value.whatsapp_lid === null) {
            yield* lids.setLid(byPhone.value.id, lid, now)
            yield* emit(byPhone.value.id, { changed: ["whatsapp_lid"] })
          }
          return
        }
        const lidContact = byLid.value
        // a contact that has a number of its own is not ours to change
        if (lidContact.phone_number !== null) return
        if (Option.isNone(byPhone)) {
          yield* lids.setPhone(lidContact.id, phone, now)
          yield* emit(lidContact.id, { changed: ["phone_number"] })
          return
        }
        yield* lids.merge({ from: lidContact.id, into: byPhone.value.id, phone, lid, now })
        yield* emit(byPhone.value.id, { merged: lidContact.id, changed: ["whatsapp_lid"] })
      }))
    })

    return { learn } as const
  }),
  dependencies: [
    LidRepo.LidRepo.Default,
    ChannelsRepo.ChannelsRepo.Default,
    EventsRepo.EventsRepo.Default,
    Transactions.Transactions.Default
  ]
}) {}
