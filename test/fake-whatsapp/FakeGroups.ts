/**
 * Group chats on the fake WhatsApp server, as WhatsApp runs them for a linked device: the group's
 * metadata (`w:g2` queries: one group, the groups the account is in), its members' sender keys
 * (a member's message is a `skmsg` encrypted with the member's own sender key, preceded the first
 * time by a `pkmsg`/`msg` to the device carrying the `SenderKeyDistributionMessage`, as WhatsApp's
 * apps send it) and its notifications (`w:gp2`: members added, removed, promoted, demoted, the
 * subject, description and announce-only setting changed). What the linked device sends to a
 * group is decrypted by every member with the sender key it distributed (Baileys' own
 * `GroupCipher`), so a test sees it as each member's phone would.
 *
 * ```ts
 * const team = wa.group({ subject: "Team", members: [alice, bob], admins: [alice] })
 * yield* alice.says("hi team", { group: team })
 * yield* team.adds(carol, { by: alice })
 * team.received[0]?.text
 * ```
 */
import { type BinaryNode, proto, unpadRandomMax16, writeRandomPadMax16 } from "baileys"
import {
  GroupCipher,
  GroupSessionBuilder,
  SenderKeyDistributionMessage,
  SenderKeyName,
  SenderKeyRecord
} from "baileys/lib/Signal/Group/index.js"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"

/** A member's role, as WhatsApp names it in the group's metadata (`type`; none for a member). */
export type GroupRole = "member" | "admin" | "superadmin"

/** Who a member is, as the group needs it: its phone number and LID users (digits), and its jids. */
export interface GroupMemberIdentity {
  /** the phone number's digits */
  readonly user: string
  /** the LID's user part */
  readonly lidUser: string
}

/** What the server does for a group (`FakeWhatsApp` implements it). */
export interface GroupLine {
  /** a `w:gp2` notification for the linked device (held while it is offline) */
  readonly notify: (node: BinaryNode) => void
  /** the account's own number and LID users */
  readonly us: () => GroupMemberIdentity
}

interface SenderKeyStore {
  loadSenderKey(name: SenderKeyName): Promise<SenderKeyRecord>
  storeSenderKey(name: SenderKeyName, record: SenderKeyRecord): Promise<void>
}

/** One phone's sender keys (its own, and those others distributed to it), in memory. */
class SenderKeys implements SenderKeyStore {
  private readonly records = new Map<string, SenderKeyRecord>()
  async loadSenderKey(name: SenderKeyName): Promise<SenderKeyRecord> {
    return this.records.get(name.toString()) ?? new SenderKeyRecord()
  }
  async storeSenderKey(name: SenderKeyName, record: SenderKeyRecord): Promise<void> {
    this.records.set(name.toString(), record)
  }
}

const senderName = (group: string, user: string, device: number) =>
  new SenderKeyName(group, { id: user, deviceId: device, toString: () => `${user}.${device}` })

const unixNow = () => String(Math.floor(Date.now() / 1000))

/** One message the linked device sent to the group, as one member's phone decrypted it. */
export interface GroupReceived {
  /** the WhatsApp message id */
  readonly id: string
  /** the member's phone number digits */
  readonly member: string
  readonly message: proto.Message
  readonly text: string | undefined
}

export interface GroupOptions {
  readonly subject: string
  readonly members: ReadonlyArray<GroupMemberIdentity>
  /** members that are admins (the first of them is the creator, a `superadmin`) */
  readonly admins?: ReadonlyArray<GroupMemberIdentity>
  readonly description?: string
  /** only admins may write */
  readonly announceOnly?: boolean
  /** our number is an admin */
  readonly weAreAdmin?: boolean
  /** our number is not a member (a group it left or was removed from) */
  readonly withoutUs?: boolean
  /** how the group names its members: by phone number (default) or by LID, with the number beside it */
  readonly addressing?: "pn" | "lid"
  /** the group's id (the user part of its jid); default: a new one */
  readonly id?: string
}

/** A group chat on the fake server. */
export class FakeGroup {
  /** `<id>@g.us` */
  readonly jid: string
  subject: string
  description: string | undefined
  announceOnly: boolean
  readonly addressing: "pn" | "lid"
  /** epoch seconds */
  readonly creation = Number(unixNow())
  /** members by phone number digits, our own number included while it is one */
  readonly members = new Map<string, { readonly who: GroupMemberIdentity; role: GroupRole }>()
  /** what the linked device sent here, one entry per (message, member) that decrypted it */
  readonly received: Array<GroupReceived> = []
  /** the group's receipts the linked device got for its messages, per member: what the server sent */
  readonly receiptsSent: Array<{ readonly id: string; readonly member: string; readonly type: "delivered" | "read" }> =
    []
  /** members' messages as the server delivered them: the id and the type of each `<enc>`, in order */
  readonly delivered: Array<{ readonly id: string; readonly encs: ReadonlyArray<string> }> = []
  /** ids of our messages WhatsApp refused here (our number not a member, or not an admin of an announce-only group) */
  readonly refused: Array<string> = []
  /** read receipts the linked device sent for members' messages here: the message and the member who wrote */
  readonly readReceipts: Array<{ readonly id: string; readonly participant: string }> = []
  /** answer our messages with a delivered and a read receipt from each member */
  autoReceipts = { delivered: true, read: true }
  /** each member's phone: its sender keys (its own for this group, the linked device's) */
  private readonly keys = new Map<string, SenderKeys>()
  /** `<member user>:<device>`: the linked devices a member's sender key was distributed to */
  private readonly distributed = new Set<string>()

  constructor(private readonly line: GroupLine, options: GroupOptions) {
    this.jid = `${options.id ?? `120363${BigInt(`0x${randomBytes(6).toString("hex")}`).toString().slice(0, 12)}`}@g.us`
    this.subject = options.subject
    this.description = options.description
    this.announceOnly = options.announceOnly === true
    this.addressing = options.addressing ?? "pn"
    const admins = new Set((options.admins ?? []).map((a) => a.user))
    const first = options.admins?.[0]?.user
    for (const member of options.members) {
      this.members.set(member.user, {
        who: member,
        role: member.user === first ? "superadmin" : admins.has(member.user) ? "admin" : "member"
      })
    }
    if (options.withoutUs !== true) {
      const us = line.us()
      this.members.set(us.user, { who: us, role: options.weAreAdmin === true ? "admin" : "member" })
    }
  }

  /** The group id (the user part of its jid), as the API's `whatsapp_group_id` would show it. */
  get id(): string {
    return this.jid.split("@")[0]!
  }

  /** Whether our number is a member. */
  get includesUs(): boolean {
    return this.members.has(this.line.us().user)
  }

  /** @internal — a member's jid as this group addresses it */
  jidOf(member: GroupMemberIdentity): string {
    return this.addressing === "lid" ? `${member.lidUser}@lid` : `${member.user}@s.whatsapp.net`
  }

  /** @internal — the `<group>` node of the metadata answers (`w:g2` query, participating) */
  metadataNode(): BinaryNode {
    const participants: Array<BinaryNode> = [...this.members.values()].map(({ who, role }) => ({
      tag: "participant",
      attrs: {
        jid: this.jidOf(who),
        ...(role === "member" ? {} : { type: role }),
        ...(this.addressing === "lid" ? { phone_number: `${who.user}@s.whatsapp.net` } : {})
      }
    }))
    const creator = [...this.members.values()].find((m) => m.role === "superadmin")?.who
    return {
      tag: "group",
      attrs: {
        id: this.id,
        subject: this.subject,
        s_t: String(this.creation),
        creation: String(this.creation),
        size: String(this.members.size),
        addressing_mode: this.addressing,
        ...(creator ? { creator: this.jidOf(creator) } : {})
      },
      content: [
        ...participants,
        ...(this.description === undefined ? [] : [{
          tag: "description",
          attrs: { id: "desc-1", t: unixNow() },
          content: [{ tag: "body", attrs: {}, content: Buffer.from(this.description) }]
        }]),
        ...(this.announceOnly ? [{ tag: "announcement", attrs: {} }] : [])
      ]
    }
  }

  private phoneOf(member: string): SenderKeys {
    const existing = this.keys.get(member)
    if (existing) return existing
    const created = new SenderKeys()
    this.keys.set(member, created)
    return created
  }

  /**
   * @internal — a member's message to the linked device `device`: the `skmsg` with the member's
   * sender key, and, the first time (or after `redistribute`), the distribution message to wrap in
   * a `pkmsg`/`msg` to the device.
   */
  async encryptFrom(
    member: GroupMemberIdentity,
    device: number,
    message: proto.IMessage
  ): Promise<{ readonly distribution: proto.IMessage | undefined; readonly skmsg: Uint8Array }> {
    const keys = this.phoneOf(member.user)
    const name = senderName(this.jid, member.user, 0)
    const skdm = await new GroupSessionBuilder(keys).create(name)
    const key = `${member.user}:${device}`
    const distribution = this.distributed.has(key) ? undefined : {
      senderKeyDistributionMessage: { groupId: this.jid, axolotlSenderKeyDistributionMessage: skdm.serialize() }
    }
    this.distributed.add(key)
    const skmsg = await new GroupCipher(keys, name).encrypt(
      writeRandomPadMax16(proto.Message.encode(message).finish())
    )
    return { distribution, skmsg }
  }

  /** @internal — the device asked for a message again: the sender key goes with it again */
  redistribute(member: GroupMemberIdentity, device: number): void {
    this.distributed.delete(`${member.user}:${device}`)
  }

  /** @internal — a member's phone keeps the sender key the linked device distributed to it */
  async receiveSenderKey(member: string, device: number, distribution: Uint8Array): Promise<void> {
    const keys = this.phoneOf(member)
    const name = senderName(this.jid, "companion", device)
    await new GroupSessionBuilder(keys).process(
      name,
      new SenderKeyDistributionMessage(null, null, null, null, distribution)
    )
  }

  /** @internal — a member's phone decrypts the linked device's `skmsg` */
  async decryptFromCompanion(member: string, device: number, skmsg: Uint8Array): Promise<proto.Message> {
    const plaintext = await new GroupCipher(this.phoneOf(member), senderName(this.jid, "companion", device))
      .decrypt(skmsg)
    return proto.Message.decode(unpadRandomMax16(plaintext))
  }

  // ---------------------------------------------------------------- what members do

  /** `member` joins (added by `by`, an admin, or by itself through an invite link). */
  adds(member: GroupMemberIdentity, options: { readonly by?: GroupMemberIdentity } = {}): Effect.Effect<void> {
    return Effect.sync(() => {
      this.members.set(member.user, { who: member, role: "member" })
      this.notify(options.by ?? member, "add", [member])
    })
  }

  /** `member` is removed by `by` (or leaves, without `by`). */
  removes(member: GroupMemberIdentity, options: { readonly by?: GroupMemberIdentity } = {}): Effect.Effect<void> {
    return Effect.sync(() => {
      this.members.delete(member.user)
      this.notify(options.by ?? member, "remove", [member])
    })
  }

  /** Our number is removed from the group by `by`. */
  removesUs(options: { readonly by: GroupMemberIdentity }): Effect.Effect<void> {
    return this.removes(this.line.us(), options)
  }

  /** `member` (our number if absent) becomes an admin, by `by`. */
  promotes(
    member: GroupMemberIdentity | undefined,
    options: { readonly by: GroupMemberIdentity }
  ): Effect.Effect<void> {
    return this.setRole(member ?? this.line.us(), "admin", "promote", options.by)
  }

  /** `member` (our number if absent) is a member again, by `by`. */
  demotes(member: GroupMemberIdentity | undefined, options: { readonly by: GroupMemberIdentity }): Effect.Effect<void> {
    return this.setRole(member ?? this.line.us(), "member", "demote", options.by)
  }

  /** `by` renames the group. */
  setsSubject(subject: string, options: { readonly by: GroupMemberIdentity }): Effect.Effect<void> {
    return Effect.sync(() => {
      this.subject = subject
      this.notifyWith(options.by, { tag: "subject", attrs: { subject, s_t: unixNow(), s_o: this.jidOf(options.by) } })
    })
  }

  /** `by` changes the description. */
  setsDescription(description: string, options: { readonly by: GroupMemberIdentity }): Effect.Effect<void> {
    return Effect.sync(() => {
      this.description = description
      this.notifyWith(options.by, {
        tag: "description",
        attrs: { id: `desc-${randomBytes(4).toString("hex")}` },
        content: [{ tag: "body", attrs: {}, content: Buffer.from(description) }]
      })
    })
  }

  /** `by` lets only admins write (`true`) or everyone (`false`). */
  setsAnnounceOnly(on: boolean, options: { readonly by: GroupMemberIdentity }): Effect.Effect<void> {
    return Effect.sync(() => {
      this.announceOnly = on
      this.notifyWith(options.by, { tag: on ? "announcement" : "not_announcement", attrs: {} })
    })
  }

  private setRole(
    member: GroupMemberIdentity,
    role: GroupRole,
    tag: "promote" | "demote",
    by: GroupMemberIdentity
  ): Effect.Effect<void> {
    return Effect.sync(() => {
      const entry = this.members.get(member.user)
      if (!entry) throw new Error(`${member.user} is not a member of ${this.jid}`)
      entry.role = role
      this.notify(by, tag, [member])
    })
  }

  private notify(by: GroupMemberIdentity, tag: string, members: ReadonlyArray<GroupMemberIdentity>) {
    this.notifyWith(by, {
      tag,
      attrs: {},
      content: members.map((m) => ({
        tag: "participant",
        attrs: {
          jid: this.jidOf(m),
          ...(this.addressing === "lid" ? { phone_number: `${m.user}@s.whatsapp.net` } : {})
        }
      }))
    })
  }

  private notifyWith(by: GroupMemberIdentity, child: BinaryNode) {
    this.line.notify({
      tag: "notification",
      attrs: {
        from: this.jid,
        type: "w:gp2",
        id: `${Math.floor(Math.random() * 1e10)}`,
        t: unixNow(),
        participant: this.jidOf(by),
        ...(this.addressing === "lid" ? { participant_pn: `${by.user}@s.whatsapp.net` } : {})
      },
      content: [child]
    })
  }
}
