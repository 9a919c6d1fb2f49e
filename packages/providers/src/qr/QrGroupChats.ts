/**
 * The group chats a QR channel's number is in, as WhatsApp reports them (docs/QR-CHANNELS.md
 * "Group chats"): the whole list when the link opens (Baileys' `groupFetchAllParticipating`), then
 * a group again whenever WhatsApp notifies a change in it (members added, removed, leaving,
 * promoted or demoted; subject, description or announce-only changed: Baileys' `groups.update`,
 * `group-participants.update`, `groups.upsert`), read with `groupMetadata`. A group WhatsApp no
 * longer describes to us (403 or 404), or whose members no longer include our number, is reported
 * as left. Queries run beside the connection's actor, one at a time in the order asked (an older
 * answer never lands after a newer one), each bounded by the query timeout; one that fails
 * otherwise is logged and the next change or link open reads the group again.
 */
import type { GroupChats } from "@switchboard/domain"
import { areJidsSameUser, type GroupMetadata, type GroupParticipant, jidDecode, type WASocket } from "baileys"
import { Clock, type Duration, Effect } from "effect"
import { lidOf, phoneOf } from "./BaileysJids.js"
import type { QrConnectionEvent } from "./QrConnectionEvent.js"

/** Our own account as Baileys knows it (`socket.user`). */
export interface Me {
  readonly id?: string | undefined
  readonly lid?: string | undefined
}

const isUs = (p: GroupParticipant, me: Me) =>
  [p.id, p.phoneNumber, p.lid].some((jid) =>
    jid !== undefined && jid !== null &&
    ((me.id !== undefined && areJidsSameUser(jid, me.id)) || (me.lid !== undefined && areJidsSameUser(jid, me.lid)))
  )

const roleOf = (p: GroupParticipant): GroupChats.GroupChatRole =>
  p.admin === "superadmin" ? "superadmin" : p.admin === "admin" ? "admin" : "member"

/** WhatsApp's id of a group: the user part of `...@g.us`. */
export const groupIdOf = (jid: string): string => jidDecode(jid)?.user ?? jid.split("@")[0] ?? jid

/** A group's metadata as the provider reports it; `undefined` when our number is not a member. */
export const snapshotOf = (metadata: GroupMetadata, me: Me): GroupChats.ProviderGroupChat | undefined => {
  const ours = metadata.participants.find((p) => isUs(p, me))
  if (ours === undefined) return undefined
  return {
    whatsappGroupId: groupIdOf(metadata.id),
    subject: metadata.subject ?? "",
    description: metadata.desc ?? null,
    announceOnly: metadata.announce === true,
    isAdmin: roleOf(ours) !== "member",
    participants: metadata.participants.filter((p) => p !== ours).flatMap((p) => {
      const phoneNumber = phoneOf(p.id) ?? phoneOf(p.phoneNumber)
      const whatsappLid = lidOf(p.id) ?? lidOf(p.lid)
      return phoneNumber === null && whatsappLid === null ? [] : [{ phoneNumber, whatsappLid, role: roleOf(p) }]
    })
  }
}

/** The error code of a refused query (Baileys' `Boom` carries it in `data`). */
const codeOf = (error: unknown): number | undefined => {
  const data = (error as { data?: unknown } | undefined)?.data
  return typeof data === "number" ? data : undefined
}

export const make = (options: {
  readonly channelId: string
  readonly annotations: Record<string, string>
  readonly publish: (event: QrConnectionEvent) => Effect.Effect<boolean>
  readonly queryTimeout: Duration.Duration
}) => {
  const { annotations, channelId, publish } = options
  /** one read at a time, in the order asked: an older answer never lands after a newer one */
  const oneAtATime = Effect.unsafeMakeSemaphore(1).withPermits(1)
  const report = (
    groupChats: ReadonlyArray<GroupChats.ProviderGroupChat>,
    left: ReadonlyArray<string>,
    complete: boolean
  ) =>
    Effect.flatMap(
      Clock.currentTimeMillis,
      (at) => publish({ _tag: "group_chats", channelId, groupChats, left, complete, at })
    )

  const query = <A>(what: string, run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: (error) => error }).pipe(
      Effect.timeoutFail({ duration: options.queryTimeout, onTimeout: () => new Error(`${what} timed out`) })
    )

  /** Every group our number is in, as the link opens (groups not listed were left meanwhile). */
  const syncAll = (socket: WASocket) =>
    oneAtATime(
      query("group list", () => socket.groupFetchAllParticipating()).pipe(
        Effect.flatMap((all) =>
          report(Object.values(all).flatMap((m) => snapshotOf(m, socket.user ?? {}) ?? []), [], true)
        ),
        Effect.catchAll((error) =>
          Effect.logWarning("qr group chats not read").pipe(
            Effect.annotateLogs({ ...annotations, error: String(error) })
          )
        )
      )
    )

  /** The groups WhatsApp said changed, each read again (or reported left). */
  const refresh = (socket: WASocket, jids: ReadonlyArray<string>) =>
    oneAtATime(Effect.forEach(new Set(jids), (jid) =>
      query("group metadata", () => socket.groupMetadata(jid)).pipe(
        Effect.flatMap((metadata) => {
          const snapshot = snapshotOf(metadata, socket.user ?? {})
          return snapshot === undefined ? report([], [groupIdOf(jid)], false) : report([snapshot], [], false)
        }),
        Effect.catchAll((error) => {
          const code = codeOf(error)
          return code === 403 || code === 404
            ? report([], [groupIdOf(jid)], false)
            : Effect.logWarning("qr group chat not read").pipe(
              Effect.annotateLogs({ ...annotations, group: groupIdOf(jid), error: String(error) })
            )
        })
      ), { discard: true }))

  return { syncAll, refresh } as const
}
