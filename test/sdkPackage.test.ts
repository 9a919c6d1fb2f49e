/**
 * The SDK as a user installs it (packages/sdk/README.md "Publish"): built to JavaScript with
 * declarations, packed with `npm pack`, unpacked into a project of its own, then used from plain
 * Node (no TypeScript loader) against a running server and type-checked by a user's `tsc`.
 *
 * One build and one tarball (`Built`): the install test and the release test take the same one, as
 * a release publishes the build it checked. A build is a `tsc` of the SDK with the contract it
 * carries (about 8 s of CPU). It is kept in the OS temp folder under the hash of every file it is
 * made from (`sdkBuildInputs`), as the test seed is, so a run on sources built before takes it as
 * it is; `test/sdkReadme.test.ts` runs the build itself (`npm run build:sdk -- --pack`, as the
 * README says) in every run (docs/TESTING.md "How long it takes").
 */
import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { build, pack } from "../scripts/build-sdk.js"
import { api, createKey, sandboxSetup } from "./support/Fixtures.js"
import { eventually, receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

const run = promisify(execFile)
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const TO = "+4915112345678"

/** The SDK built (`dist`, a package directory) and packed (`tarball`) once for the file, in `work`. */
class Built extends Context.Tag("test/SdkBuilt")<Built, { readonly dist: string; readonly tarball: string }>() {}

/** Every file the SDK's build reads (scripts/build-sdk.ts, its tsconfig, the sources it compiles, the pins it copies). */
const sdkBuildInputs = (): ReadonlyArray<string> =>
  [
    ...["packages/sdk/src", "packages/api/src", "packages/domain/src"].flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
        .map((file) => join(dir, file))
        .filter((file) => statSync(join(root, file)).isFile())
    ),
    "packages/sdk/package.json",
    "packages/sdk/tsconfig.build.json",
    "packages/sdk/README.md",
    "packages/api/package.json",
    "packages/domain/package.json",
    "tsconfig.json",
    "package.json",
    "package-lock.json",
    "scripts/build-sdk.ts"
  ].sort()

/**
 * The build and its tarball for the sources as they are: `<temp>/switchboard-test/sdk-<hash>`,
 * made here when no run made it yet (under a temporary name, then renamed: a concurrent run finds
 * all of it or none). Builds of other sources older than a day are removed.
 */
const builtFor = (): { readonly dist: string; readonly tarball: string } => {
  const hash = createHash("sha256")
  for (const file of sdkBuildInputs()) hash.update(`${file}\0`).update(readFileSync(join(root, file))).update("\0")
  const cache = join(tmpdir(), "switchboard-test")
  const dir = join(cache, `sdk-${hash.digest("hex").slice(0, 16)}`)
  const made = () => {
    const [tarball] = readdirSync(dir).filter((file) => file.endsWith(".tgz"))
    return { dist: join(dir, "dist"), tarball: join(dir, tarball!) }
  }
  if (existsSync(join(dir, "complete"))) {
    // in use: not one of the builds older than a day that a run on other sources removes
    utimesSync(dir, new Date(), new Date())
    return made()
  }
  mkdirSync(cache, { recursive: true })
  for (const old of readdirSync(cache).filter((name) => /^sdk-[0-9a-f]{16}$/.test(name))) {
    if (Date.now() - statSync(join(cache, old)).mtimeMs > 86_400_000) {
      rmSync(join(cache, old), { recursive: true, force: true })
    }
  }
  const partial = mkdtempSync(`${dir}.partial-`)
  pack(build(join(partial, "dist")), partial)
  writeFileSync(join(partial, "complete"), "")
  try {
    renameSync(partial, dir)
  } catch {
    rmSync(partial, { recursive: true, force: true }) // another run made it meanwhile
  }
  return made()
}

const builtLayer = Layer.sync(Built, builtFor)

/** A user's project with the packed tarball installed (its dependencies linked from ours: same pins). */
const installPacked = () =>
  Effect.gen(function*() {
    const { tarball } = yield* Built
    const work = mkdtempSync(join(tmpdir(), "sdk-package-"))
    const project = join(work, "project")
    const installed = join(project, "node_modules/@switchboard/sdk")
    mkdirSync(installed, { recursive: true })
    yield* Effect.promise(() => run("tar", ["xzf", tarball, "-C", installed, "--strip-components=1"]))
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"))
    for (const name of [...Object.keys(manifest.dependencies), "@types/node"]) {
      mkdirSync(dirname(join(project, "node_modules", name)), { recursive: true })
      symlinkSync(join(root, "node_modules", name), join(project, "node_modules", name))
    }
    writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module", private: true }))
    return { work, project, manifest }
  })

const consumerScript = `
import { createClient, SwitchboardError, verifyWebhook } from "@switchboard/sdk"
import { readFileSync } from "node:fs"

const switchboard = createClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY })
const sent = await switchboard.messages.send({ payload: { to: process.env.TO, text: { body: "from the tarball" } }, headers: {} })
const refusal = await switchboard.messages.send({ payload: { to: "+4915199999999", text: { body: "x" } }, headers: {} })
  .then(() => "accepted", (error) => error instanceof SwitchboardError ? \`\${error.status} \${error.code} \${error.details.reason}\` : String(error))
const invalid = await switchboard.messages.send({ payload: { to: process.env.TO, text: { body: "" } }, headers: {} })
  .then(() => "sent", (error) => \`\${error.status} \${error.code} \${error.message}\`)
const delivery = JSON.parse(readFileSync(process.env.DELIVERY_FILE, "utf8"))
const verified = verifyWebhook(delivery.body, delivery.headers, process.env.WEBHOOK_SECRET)
const tampered = verifyWebhook(delivery.body.replace("message.", "massage."), delivery.headers, process.env.WEBHOOK_SECRET)
console.log(JSON.stringify({ id: sent.id, status: sent.status, refusal, invalid, verified: verified.valid && verified.event.type, tampered: tampered.valid ? "valid" : tampered.reason }))
`

const typedConsumer = `
import { createClient, verifyWebhook, type WebhookEvent } from "@switchboard/sdk"
const switchboard = createClient({ baseUrl: "http://127.0.0.1:1", apiKey: "wa_test_x" })
export const send = async (): Promise<string> => {
  const message = await switchboard.messages.send({ payload: { to: "+4915112345678", text: { body: "hi" } }, headers: {} })
  const status:
    | "created" | "queued" | "dispatching" | "provider_accepted" | "sent" | "delivered" | "read"
    | "failed_retryable" | "failed_permanent" | "expired" | "cancelled" = message.status
  return message.id + status
}
export const check = (body: string, headers: Record<string, string>): WebhookEvent | undefined => {
  const result = verifyWebhook(body, headers, "whsec_x")
  return result.valid ? result.event : undefined
}
`

/** A user's strict `tsc` over `files` in `project` (declarations of every library checked too): what it prints. */
const tsc = (project: string, files: ReadonlyArray<string>) =>
  Effect.promise(() =>
    run(process.execPath, [
      join(root, "node_modules/typescript/bin/tsc"),
      "--noEmit",
      "--strict",
      "--exactOptionalPropertyTypes",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--types",
      "node",
      "--skipLibCheck",
      "false",
      ...files
    ], { cwd: project }).then(() => "", (error: { stdout: string }) => error.stdout)
  )

describe("@switchboard/sdk as a published package", () => {
  layer(Layer.merge(TestApp.layer(), builtLayer), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped(
      "installs from its tarball and runs on plain Node: sends, refuses with typed codes, verifies webhooks",
      () =>
        Effect.gen(function*() {
          const { work, project, manifest } = yield* installPacked()
          yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))
          // depends only on public packages, pinned: the private contract packages travel inside it
          for (const [name, version] of Object.entries(manifest.dependencies as Record<string, string>)) {
            assert.notMatch(name, /^@switchboard\//)
            assert.match(version, /^\d+\.\d+\.\d+/)
          }

          const sink = yield* receiver()
          const { key, user } = yield* sandboxSetup([TO])
          const admin = yield* createKey(user, { scopes: ["webhooks.manage"] })
          const endpoint = yield* (yield* api(admin.secret)).webhooks.create({
            payload: { url: `${sink.url}/hooks`, event_types: ["message.queued"] }
          })
          const server = yield* HttpServer.HttpServer
          const address = server.address
          if (address._tag !== "TcpAddress") return assert.fail("expected a TCP server")

          writeFileSync(join(project, "consumer.mjs"), consumerScript)
          const deliveryFile = join(project, "delivery.json")
          const client = yield* api(key)
          const probe = yield* client.messages.send({ payload: { to: TO, text: { body: "probe" } }, headers: {} })
          assert.strictEqual(probe.text.body, "probe")
          yield* eventually(() => sink.received.length >= 1 || undefined)
          writeFileSync(deliveryFile, JSON.stringify(sink.received[0]))

          const { stdout } = yield* Effect.promise(() =>
            run(process.execPath, ["consumer.mjs"], {
              cwd: project,
              env: {
                PATH: process.env["PATH"] ?? "",
                BASE_URL: `http://127.0.0.1:${address.port}`,
                API_KEY: key,
                TO,
                DELIVERY_FILE: deliveryFile,
                WEBHOOK_SECRET: endpoint.secret
              }
            })
          )
          const result = JSON.parse(stdout)
          assert.match(result.id, /^msg_/)
          assert.strictEqual(result.status, "queued")
          assert.strictEqual(result.refusal, "422 VALIDATION_ERROR recipient_not_verified")
          assert.strictEqual(
            result.invalid,
            "422 VALIDATION_ERROR Request validation failed: text.body: Expected a non-empty text body"
          )
          assert.strictEqual(result.verified, "message.queued")
          assert.strictEqual(result.tampered, "no_matching_signature")
          const stored = yield* client.messages.get({ path: { messageId: result.id } })
          assert.strictEqual(stored.text.body, "from the tarball")

          // a user's strict tsc accepts correct use and rejects a wrong body: the declarations are real types.
          // One program of both files (one check of the libraries' declarations, not two): every
          // error it reports is in wrong.ts, none in typed.ts, the SDK's declarations or a library's
          writeFileSync(join(project, "typed.ts"), typedConsumer)
          writeFileSync(join(project, "wrong.ts"), typedConsumer.replace(`to: "+4915112345678"`, "to: 4915112345678"))
          const checked = yield* tsc(project, ["typed.ts", "wrong.ts"])
          const errors = checked.split("\n").filter((line) => /error TS\d+/.test(line))
          assert.match(checked, /^wrong\.ts\(\d+,\d+\): error TS2322/m)
          assert.deepStrictEqual(errors.filter((line) => !line.startsWith("wrong.ts(")), [], checked)
        }),
      180_000
    ) // runs the packed SDK on Node and a user's tsc over it

    it.scoped(
      "installs and releases as its README says: the tarball it names, a public publish of the build",
      () =>
        Effect.gen(function*() {
          const readme = readFileSync(join(root, "packages/sdk/README.md"), "utf8")
          const block = (name: string) =>
            new RegExp(`<!-- ${name}:start -->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\`\\n<!-- ${name}:end -->`).exec(readme)
              ?.[1] ?? ""
          const { dist, tarball } = yield* Built

          // the install steps name the tarball `npm run build:sdk -- --pack` makes, and never the registry
          const install = block("sdk-install")
          assert.include(install, "npm run build:sdk -- --pack\n")
          assert.include(install, `npm install ./vendor/${tarball.split("/").pop()}\n`)
          assert.notMatch(
            readme.slice(0, readme.indexOf("<!-- sdk-install:end -->")),
            /^npm install @switchboard\/sdk/m
          )

          // the release steps: build, a dry run that would publish this package publicly, publish
          const release = block("sdk-release").split("\n").filter((l) => l !== "" && !l.startsWith("#"))
          assert.deepStrictEqual(release.map((l) => l.replace(/\s+#.*$/, "")), [
            "npm run build:sdk",
            "npm publish packages/sdk/dist --dry-run",
            "npm publish packages/sdk/dist"
          ])
          const dryRun = yield* Effect.promise(() =>
            run("npm", ["publish", "--dry-run", "--json"], {
              cwd: dist,
              env: { ...process.env, npm_config_loglevel: "notice" }
            })
          )
          const published = JSON.parse(dryRun.stdout)["@switchboard/sdk"]
          assert.strictEqual(
            published.id,
            `@switchboard/sdk@${JSON.parse(readFileSync(join(root, "packages/sdk/package.json"), "utf8")).version}`
          )
          assert.include(published.files.map((f: { path: string }) => f.path), "lib/sdk/src/index.js")
          assert.match(dryRun.stderr, /public access/)
        }),
      180_000
    )
  })
})
