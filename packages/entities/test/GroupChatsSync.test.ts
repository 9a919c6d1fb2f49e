/**
 * A group chat's `updated_at` (docs/API.md "Group chats") is when it last changed: a report that
 * changes nothing (every link open reads every group again) leaves it; a new subject, a member
 * joining or leaving, or a role changing moves it.
 */
import { assert, describe, layer } from "@effect/vitest"
import { GroupChatsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { type GroupChats, Schemas } from "@switchboard/domain"
import { GroupChatsSync } from "@switchboard/entities"
import { Effect, Layer, Option } from "effect"
import { EntityRepos, setupChannel } from "./support.js"

const TestLayer = Layer.mergeAll(EntityRepos, GroupChatsRepo.GroupChatsRepo.Default).pipe(
  Layer.provideMerge(TestDatabase.sqlLayer)
)

const GROUP = "120363000000000077"
const T0 = Date.parse("2026-11-01T10:00:00.000Z")
const at = (minutes: number) => Schemas.toTimestamp(T0 + minutes * 60_000)

const report = (
  subject: string,
  participants: ReadonlyArray<GroupChats.ProviderGroupParticipant>
): GroupChats.ProviderGroupChat => ({
  whatsappGroupId: GROUP,
  subject,
  description: null,
  announceOnly: false,
  isAdmin: false,
  participants
})

const alice = { phoneNumber: "+4915100000071", whatsappLid: null, role: "admin" } as const
const bob = { phoneNumber: "+4915100000072", whatsappLid: null, role: "member" } as const

describe("a group chat's updated_at", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.effect("moves when the group chat changes, not when WhatsApp reports it again unchanged", () =>
      Effect.gen(function*() {
        const sync = yield* GroupChatsSync.GroupChatsSync
        const repo = yield* GroupChatsRepo.GroupChatsRepo
        const target = yield* setupChannel({ provider: "qr" })
        const record = (groupChat: GroupChats.ProviderGroupChat, minutes: number) =>
          sync.record({
            workspaceId: target.workspaceId,
            channelId: target.channelId,
            groupChats: [groupChat],
            left: [],
            complete: true,
            now: at(minutes)
          })
        const updatedAt = Effect.map(
          repo.byWhatsAppId(target.channelId, GROUP),
          (found) => Option.getOrThrow(found).updated_at
        )

        yield* record(report("Orders", [alice]), 0)
        assert.strictEqual(yield* updatedAt, at(0))
        // the link opens again: the same report changes nothing
        yield* record(report("Orders", [alice]), 5)
        assert.strictEqual(yield* updatedAt, at(0))
        // a member joins
        yield* record(report("Orders", [alice, bob]), 10)
        assert.strictEqual(yield* updatedAt, at(10))
        // a role changes
        yield* record(report("Orders", [alice, { ...bob, role: "admin" }]), 15)
        assert.strictEqual(yield* updatedAt, at(15))
        // a member leaves
        yield* record(report("Orders", [alice]), 20)
        assert.strictEqual(yield* updatedAt, at(20))
        // the subject changes
        yield* record(report("Orders (EU)", [alice]), 25)
        assert.strictEqual(yield* updatedAt, at(25))
        yield* record(report("Orders (EU)", [alice]), 30)
        assert.strictEqual(yield* updatedAt, at(25))
      }))
  })
})
