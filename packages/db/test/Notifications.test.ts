/**
 * Work queued in rows tells its worker as it commits (`Notifications`): a recorded inbound file
 * (`MediaRepo.createInbound`) and a queued contact import (`ContactImportsRepo.insert`) notify
 * their channel with their id when their transaction commits, never when it rolls back, and an
 * upload (not the worker's) does not. Real mode only hears them: the embedded database has one
 * connection, so `listen` answers `None` there and the workers poll.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ContactImportsRepo, MediaRepo, Notifications } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, Schemas } from "@switchboard/domain"
import { Effect, Layer, Option, Ref, Stream } from "effect"

const TestLayer = Layer.mergeAll(MediaRepo.MediaRepo.Default, ContactImportsRepo.ContactImportsRepo.Default).pipe(
  Layer.provideMerge(TestDatabase.sqlLayer)
)

/** Real time (the test's clock is a TestClock): notifications travel through a real connection. */
const pause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

const now = () => Schemas.toTimestamp(Date.now())

/** What `channel` is told from now on, in order. */
const heard = (channel: string) =>
  Effect.gen(function*() {
    const listened = yield* Notifications.listen(channel)
    const ids = yield* Ref.make<ReadonlyArray<string>>([])
    if (Option.isSome(listened)) {
      yield* listened.value.pipe(Stream.runForEach((id) => Ref.update(ids, (all) => [...all, id])), Effect.forkScoped)
      // the LISTEN is on its connection before anything commits
      yield* pause(300)
    }
    return { listening: Option.isSome(listened), ids }
  })

class RolledBack {
  readonly _tag = "RolledBack"
}

describe("Notifications", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.scoped("an inbound file's id reaches the media worker's channel as it commits, and only then", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const media = yield* MediaRepo.MediaRepo
        const { ids, listening } = yield* heard(Notifications.MEDIA_DUE)
        assert.strictEqual(listening, TestDatabase.mode() === "real", "listened to on a Postgres server only")
        const workspaceId = yield* Ids.newId("ws")
        yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now()}, ${now()})`
        const channelId = yield* Ids.newId("ch")
        yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, created_at, updated_at)
          VALUES (${channelId}, ${workspaceId}, 'c', 'qr', 'connected', ${now()}, ${now()})`
        const inbound = (id: string) =>
          media.createInbound({
            id,
            workspaceId,
            channelId,
            messageId: `msg_${id.slice(4)}`,
            kind: "image",
            mimeType: "image/jpeg",
            filename: null,
            expectedSize: null,
            expectedSha256: null,
            source: { key: id },
            now: now(),
            expiresAt: Schemas.toTimestamp(Date.now() + 86_400_000)
          })
        const committed = yield* Ids.newId("med")
        const rolledBack = yield* Ids.newId("med")
        const upload = yield* Ids.newId("med")
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* inbound(committed)
          if (listening) {
            yield* pause(300)
            assert.deepStrictEqual(yield* Ref.get(ids), [], "nothing is told before the commit")
          }
        }))
        yield* sql.withTransaction(Effect.zipRight(inbound(rolledBack), Effect.fail(new RolledBack()))).pipe(
          Effect.catchTag("RolledBack", () => Effect.void)
        )
        yield* media.createUpload({
          id: upload,
          workspaceId,
          kind: "image",
          mimeType: "image/jpeg",
          filename: null,
          now: now(),
          expiresAt: Schemas.toTimestamp(Date.now() + 86_400_000)
        })
        yield* pause(300)
        assert.deepStrictEqual(yield* Ref.get(ids), listening ? [committed] : [])
        const rows = yield* sql<{ id: string }>`SELECT id FROM media WHERE id IN (${committed}, ${rolledBack})`
        assert.deepStrictEqual(rows.map((r) => r.id), [committed], "the notified row is there to claim")
      }))

    it.scoped("a queued contact import's id reaches the import worker's channel as it commits", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const imports = yield* ContactImportsRepo.ContactImportsRepo
        const { ids, listening } = yield* heard(Notifications.CONTACT_IMPORT_QUEUED)
        const workspaceId = yield* Ids.newId("ws")
        yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now()}, ${now()})`
        const queue = (id: string) =>
          imports.insert({
            id,
            workspaceId,
            onConflict: "skip",
            defaultCountry: null,
            tags: [],
            groupId: null,
            file: "phone_number\n+14155550100\n",
            totalRows: 1,
            now: now()
          })
        const queued = yield* Ids.newId("imp")
        const rolledBack = yield* Ids.newId("imp")
        yield* queue(queued)
        yield* sql.withTransaction(Effect.zipRight(queue(rolledBack), Effect.fail(new RolledBack()))).pipe(
          Effect.catchTag("RolledBack", () => Effect.void)
        )
        yield* pause(300)
        assert.deepStrictEqual(yield* Ref.get(ids), listening ? [queued] : [])
      }))
  })
})
