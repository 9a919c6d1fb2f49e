/**
 * Rotation of `SECRETS_ENCRYPTION_KEY` across restarts of the whole app on one database (real
 * Postgres, or the embedded database in a folder, so the operator CLI can open it as its own
 * process): secrets sealed under key A keep working while the app runs with current = B and
 * previous = A; `npm run admin -- reseal-secrets` moves every stored value to B; then B alone
 * reads everything. A value no key opens makes the command exit 1 and stays as it is.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { DatabaseConfig, MigratedDatabase, WebhookEndpointsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, Schemas } from "@switchboard/domain"
import { Redis, SecretBox, SecretsConfig } from "@switchboard/infra"
import * as TestRedis from "@switchboard/infra/testing"
import { QrAuthState, QrAuthStateRepo } from "@switchboard/providers"
import { verifyWebhook } from "@switchboard/sdk"
import { SecretsReseal } from "@switchboard/service-api"
import { BufferJSON, Curve, initAuthCreds } from "baileys"
import { Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { api, createKey, signUp } from "./support/Fixtures.js"
import { adminExit } from "./support/Processes.js"
import { eventually, type Received, receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

const keyA = Redacted.make(randomBytes(32))
const keyB = Redacted.make(randomBytes(32))
const base64 = (key: Redacted.Redacted<Buffer>) => Redacted.value(key).toString("base64")

const opensWith = (key: Redacted.Redacted<Buffer>, value: string) => SecretBox.opens(Redacted.value(key), value)

/** A database the CLI process can open too: a real one, or the embedded one in a folder. */
const database = Effect.acquireRelease(
  Effect.promise(async () => {
    const url = TestDatabase.testDatabaseUrl()
    if (url !== undefined) {
      const db = await TestDatabase.e2eDatabase(url, "reseal")
      return {
        config: DatabaseConfig.layer({ url: Option.some(Redacted.make(db.url)), maxConnections: 5 }),
        env: { DATABASE_URL: db.url } as Record<string, string>,
        drop: db.drop
      }
    }
    // already migrated (`seededDataDir`): the app's layers and the CLI find the migrations run
    const dir = await TestDatabase.seededDataDir(mkdtempSync(join(tmpdir(), "sbt-reseal-")))
    return {
      config: DatabaseConfig.layer({ url: Option.none(), dataDir: dir }),
      env: { DATA_DIR: dir } as Record<string, string>,
      drop: async () => rmSync(dir, { recursive: true, force: true })
    }
  }),
  (db) => Effect.promise(() => db.drop())
)

describe("SECRETS_ENCRYPTION_KEY rotation", () => {
  it.scopedLive(
    "keeps webhook secrets and QR links working under current = B, previous = A; reseal-secrets moves all to B",
    () =>
      Effect.gen(function*() {
        const db = yield* database
        const redisUrl = TestRedis.testRedisUrl()
        const infrastructure = Layer.merge(MigratedDatabase.layerWithConfig, Redis.layer).pipe(
          Layer.provideMerge(Layer.merge(
            db.config,
            Redis.configLayer({
              url: redisUrl ? Option.some(Redacted.make(redisUrl)) : Option.none(),
              keyPrefix: `sbt_reseal_${process.pid}:`
            })
          )),
          Layer.orDie
        )
        /** The whole app under `keyring`, for `use` only: the embedded database has one owner at a time. */
        const withApp = <A, E>(
          keyring: SecretsConfig.Keyring,
          use: Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof TestApp.appLayer>> | SqlClient.SqlClient>
        ) =>
          Effect.gen(function*() {
            const scope = yield* Scope.make()
            const context = yield* Layer.buildWithScope(
              TestApp.appLayer({}, { webhooks: { keyring }, qr: { keyring } }).pipe(Layer.provideMerge(infrastructure)),
              scope
            ).pipe(Effect.orDie)
            return yield* use.pipe(Effect.provide(context), Effect.ensuring(Scope.close(scope, Exit.void)))
          })

        const sink = yield* receiver()
        /** Sends a test event to `endpoint` and returns the request it made. */
        const testDelivery = (token: string, endpoint: `wh_${string}`) =>
          Effect.gen(function*() {
            const before = sink.received.length
            const test = yield* (yield* api(token)).webhooks.test({ path: { endpointId: endpoint }, payload: {} })
            return yield* eventually(
              () => sink.received.slice(before).find((r) => r.headers["x-webhook-delivery-id"] === test.delivery_id),
              30_000
            )
          })
        const signedBy = (received: Received, secret: string) =>
          received.headers["x-webhook-signature"]!.toString().split(",").some((signature) =>
            verifyWebhook(received.body, { ...received.headers, "x-webhook-signature": signature } as any, secret).valid
          )

        // 1. everything sealed under A: two endpoints (one rotated: its previous secret too) and a QR link
        const underA = SecretsConfig.makeKeyring(keyA)
        const setup = yield* withApp(
          underA,
          Effect.gen(function*() {
            const user = yield* signUp()
            const key = yield* createKey(user, { scopes: ["webhooks.manage"] })
            // two endpoints: more than the free plan allows
            const sql = yield* SqlClient.SqlClient
            yield* sql`UPDATE workspaces SET plan = 'starter' WHERE id = ${user.workspaceId}`
            const client = yield* api(key.secret)
            const create = () => client.webhooks.create({ payload: { url: sink.url, event_types: ["*"] } })
            const one = yield* create()
            const two = yield* create()
            const rotated = yield* client.webhooks.rotateSecret({ path: { endpointId: two.id } })
            assert.strictEqual(rotated.id, two.id)
            const channelId = yield* Ids.newId("ch")
            const repo = yield* QrAuthStateRepo.QrAuthStateRepo
            const auth = yield* QrAuthState.load(channelId, underA)
            auth.state.creds.me = { id: "15550005555:4@s.whatsapp.net" }
            yield* Effect.promise(() => auth.saveCreds())
            yield* Effect.promise(async () => auth.state.keys.set({ "pre-key": { "1": Curve.generateKeyPair() } }))
            // and a row an earlier version stored in plaintext
            const plain = JSON.stringify(initAuthCreds(), BufferJSON.replacer)
            yield* repo.writeKeys(channelId, [{ type: "session", id: "old", value: plain }])
            return {
              token: key.secret,
              one: { id: one.id, secret: one.secret },
              two: { id: two.id, secret: rotated.secret, previous: two.secret },
              channelId,
              advSecretKey: auth.state.creds.advSecretKey
            }
          }).pipe(Effect.provide(QrAuthStateRepo.QrAuthStateRepo.Default))
        )

        // 2. current = B, previous = A: endpoints created under A still sign correctly; a new
        // secret is sealed under B
        const rotating = SecretsConfig.makeKeyring(keyB, [keyA])
        const oneRotated = yield* withApp(
          rotating,
          Effect.gen(function*() {
            const first = yield* testDelivery(setup.token, setup.one.id)
            assert.isTrue(signedBy(first, setup.one.secret))
            const second = yield* testDelivery(setup.token, setup.two.id)
            assert.isTrue(signedBy(second, setup.two.secret))
            assert.isTrue(signedBy(second, setup.two.previous))
            const rotated = yield* (yield* api(setup.token)).webhooks.rotateSecret({
              path: { endpointId: setup.one.id }
            })
            assert.strictEqual(rotated.id, setup.one.id)
            const third = yield* testDelivery(setup.token, setup.one.id)
            assert.isTrue(signedBy(third, rotated.secret))
            assert.isTrue(signedBy(third, setup.one.secret))
            return rotated.secret
          })
        )

        // 3. the CLI, as its own process, with the app stopped
        const env = {
          ...db.env,
          SECRETS_ENCRYPTION_KEY: base64(keyB),
          SECRETS_ENCRYPTION_KEY_PREVIOUS: base64(keyA)
        }
        const run = yield* Effect.promise(() => adminExit(["reseal-secrets"], env))
        assert.strictEqual(run.code, 0, run.stderr)
        // endpoint one: its new secret is under B already, its previous one (A) moves; endpoint two: both move
        assert.deepStrictEqual(run.json, { webhook_secrets: 3, qr_auth_rows: 3, already_current: 1, failed: 0 })

        // 4. B alone reads everything
        const underB = SecretsConfig.makeKeyring(keyB)
        yield* withApp(
          underB,
          Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            const endpoints = yield* sql<{ secret_sealed: string; previous_secret_sealed: string | null }>`
            SELECT secret_sealed, previous_secret_sealed FROM webhook_endpoints`
            const qrRows = yield* sql<{ value: string }>`SELECT value FROM qr_auth_state`
            const values = [
              ...endpoints.flatMap((e) => [e.secret_sealed, e.previous_secret_sealed ?? []].flat()),
              ...qrRows.map((r) => r.value)
            ]
            assert.strictEqual(values.length, 7)
            for (const value of values) {
              assert.isTrue(opensWith(keyB, value))
              assert.isFalse(opensWith(keyA, value))
            }
            const delivered = yield* testDelivery(setup.token, setup.one.id)
            assert.isTrue(signedBy(delivered, oneRotated))
            assert.isTrue(signedBy(delivered, setup.one.secret))
            const two = yield* testDelivery(setup.token, setup.two.id)
            assert.isTrue(signedBy(two, setup.two.secret))
            assert.isTrue(signedBy(two, setup.two.previous))
            const auth = yield* QrAuthState.load(setup.channelId, underB)
            assert.isTrue(auth.isPaired())
            assert.strictEqual(auth.state.creds.advSecretKey, setup.advSecretKey)

            // a value sealed under a key nobody has any more
            const lost = SecretsConfig.makeKeyring(Redacted.make(randomBytes(32))).seal("\"lost\"")
            yield* (yield* QrAuthStateRepo.QrAuthStateRepo).writeKeys(setup.channelId, [{
              type: "session",
              id: "lost",
              value: lost
            }])
            return lost
          }).pipe(Effect.provide(QrAuthStateRepo.QrAuthStateRepo.Default))
        ).pipe(
          Effect.flatMap((lost) =>
            Effect.gen(function*() {
              // 5. a second run: everything current, the unreadable row counted as failed, kept, exit 1
              const again = yield* Effect.promise(() => adminExit(["reseal-secrets"], env))
              assert.strictEqual(again.code, 1, again.stderr)
              assert.deepStrictEqual(again.json, { webhook_secrets: 0, qr_auth_rows: 0, already_current: 7, failed: 1 })
              yield* withApp(
                underB,
                Effect.gen(function*() {
                  const sql = yield* SqlClient.SqlClient
                  const rows = yield* sql<{ value: string }>`
                  SELECT value FROM qr_auth_state WHERE channel_id = ${setup.channelId} AND key_id = 'lost'`
                  assert.deepStrictEqual(rows.map((r) => r.value), [lost])
                })
              )
            })
          )
        )
      }),
    { timeout: 240_000 }
  )
})

describe("SecretsReseal (in process)", () => {
  const TestLayer = Layer.mergeAll(
    SecretsReseal.SecretsReseal.Default,
    WebhookEndpointsRepo.WebhookEndpointsRepo.Default,
    QrAuthStateRepo.QrAuthStateRepo.Default
  ).pipe(
    Layer.provideMerge(TestDatabase.sqlLayer)
  )
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("walks both tables in batches and writes a row only if it is unchanged since read", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const endpoints = yield* WebhookEndpointsRepo.WebhookEndpointsRepo
        const qrAuth = yield* QrAuthStateRepo.QrAuthStateRepo
        const underA = SecretsConfig.makeKeyring(keyA)
        const now = Schemas.toTimestamp(Date.now())
        const workspaceId = yield* Ids.newId("ws")
        yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now}, ${now})`
        for (let i = 0; i < 5; i++) {
          yield* endpoints.insert({
            id: yield* Ids.newId("wh"),
            workspaceId,
            url: "https://example.com/hook",
            eventTypes: ["*"],
            description: "",
            secretSealed: underA.seal(`whsec_${i}`),
            secretLast4: "0000",
            now
          })
        }
        const channelId = yield* Ids.newId("ch")
        yield* qrAuth.writeKeys(
          channelId,
          Array.from({ length: 5 }, (_, i) => ({ type: "pre-key", id: String(i), value: underA.seal(`"k${i}"`) }))
        )

        // compare-and-set: a stale read writes nothing
        const [stale] = yield* endpoints.scanSecrets(Option.none(), 1)
        assert.isFalse(
          yield* endpoints.replaceSecrets({ ...stale!, secret_sealed: "v1:x:y:z" }, {
            secret_sealed: "v1:overwritten",
            previous_secret_sealed: null
          })
        )
        const [staleQr] = yield* qrAuth.scan(Option.none(), 1)
        assert.isFalse(yield* qrAuth.replaceValue({ ...staleQr!, value: "v1:x:y:z" }, "v1:overwritten"))

        const reseal = yield* SecretsReseal.SecretsReseal
        const counts = yield* reseal.run(SecretsConfig.makeKeyring(keyB, [keyA]), 2)
        assert.deepStrictEqual(counts, { webhook_secrets: 5, qr_auth_rows: 5, already_current: 0, failed: 0 })
        const secrets = yield* endpoints.scanSecrets(Option.none(), 100)
        assert.deepStrictEqual(
          secrets.map((s) => SecretBox.open(Redacted.value(keyB), s.secret_sealed)).sort(),
          ["whsec_0", "whsec_1", "whsec_2", "whsec_3", "whsec_4"]
        )
        const rows = yield* qrAuth.scan(Option.none(), 100)
        assert.deepStrictEqual(rows.map((r) => SecretBox.open(Redacted.value(keyB), r.value)).sort(), [
          "\"k0\"",
          "\"k1\"",
          "\"k2\"",
          "\"k3\"",
          "\"k4\""
        ])
        // nothing left to do; B alone sees everything as current
        assert.deepStrictEqual(yield* reseal.run(SecretsConfig.makeKeyring(keyB), 2), {
          webhook_secrets: 0,
          qr_auth_rows: 0,
          already_current: 10,
          failed: 0
        })
      }))
  })
})
