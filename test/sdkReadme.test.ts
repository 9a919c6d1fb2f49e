/**
 * packages/sdk/README.md's install steps and first example run exactly as written (the README's
 * own blocks, only `/path/to/switchboard` replaced by this clone): the build and pack in the clone,
 * then in a fresh folder `mkdir`, `cp` and `npm install` of the tarball, then the plain `.mjs`
 * example on this Node against a running server. A call that leaves out a member names it.
 *
 * The one provision of the test: the fresh folder's registry dependencies (Effect, ...) are linked
 * from this clone's node_modules and npm runs offline, so the run needs no network (the versions
 * are the ones the tarball pins).
 */
import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { promisify } from "node:util"
import { sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const run = promisify(execFile)
const root = resolve(import.meta.dirname, "..")
const readme = readFileSync(join(root, "packages/sdk/README.md"), "utf8")
const block = (name: string, lang: string) =>
  new RegExp(`<!-- ${name}:start -->\\n\`\`\`${lang}\\n([\\s\\S]*?)\`\`\`\\n<!-- ${name}:end -->`).exec(readme)?.[1] ??
    ""

const bash = (script: string, cwd: string, env: Record<string, string> = {}) =>
  Effect.promise(() =>
    run("bash", ["-euo", "pipefail", "-c", script], { cwd, env: { ...process.env, ...env }, maxBuffer: 1 << 24 }).then(
      ({ stdout }) => ({ ok: true as const, out: stdout }),
      (error: { stdout?: string; stderr?: string }) => ({ ok: false as const, out: `${error.stdout}\n${error.stderr}` })
    )
  )

const named = `
import { createClient, verifyWebhook } from "@switchboard/sdk"
const switchboard = createClient({ baseUrl: process.env.SWITCHBOARD_URL, apiKey: process.env.SWITCHBOARD_KEY })
const send = await switchboard.messages.send({ payload: { to: "+4915112345678", text: { body: "x" } } })
  .then(() => "sent", (error) => error.message)
let verify = "no error"
try { verifyWebhook("{}") } catch (error) { verify = error.message }
console.log(JSON.stringify({ send, verify }))
`

describe("packages/sdk/README.md as written", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.scoped(
      "installs from the packed tarball in a fresh folder and runs the .mjs example on Node 20",
      () =>
        Effect.gen(function*() {
          const install = block("sdk-install", "sh").replaceAll("/path/to/switchboard", root)
          const [inClone, inProject] = install.split(/^(?=# in your project)/m)
          assert.isDefined(inProject, install)

          const work = mkdtempSync(join(tmpdir(), "sdk-readme-"))
          yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))
          const built = yield* bash(inClone!, root)
          assert.isTrue(built.ok, built.out)

          const project = join(work, "my-app")
          mkdirSync(project)
          const manifest = JSON.parse(readFileSync(join(root, "packages/sdk/dist/package.json"), "utf8"))
          for (const name of Object.keys(manifest.dependencies)) {
            mkdirSync(dirname(join(project, "node_modules", name)), { recursive: true })
            symlinkSync(join(root, "node_modules", name), join(project, "node_modules", name))
          }
          const installed = yield* bash(inProject!, project, {
            npm_config_offline: "true",
            npm_config_audit: "false",
            npm_config_fund: "false"
          })
          assert.isTrue(installed.ok, installed.out)
          const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8"))
          assert.strictEqual(pkg.dependencies["@switchboard/sdk"], "file:vendor/switchboard-sdk-0.1.0.tgz")

          const { key } = yield* sandboxSetup(["+4915112345678"])
          const address = (yield* HttpServer.HttpServer).address
          if (address._tag !== "TcpAddress") return assert.fail("expected a TCP server")
          const env = { SWITCHBOARD_URL: `http://127.0.0.1:${address.port}`, SWITCHBOARD_KEY: key }
          const example = block("sdk-example", "js")
          const comment = /^\/\/ (\S+\.mjs): /.exec(example)
          assert.isNotNull(comment, "the example names its file")
          writeFileSync(join(project, comment![1]!), example)
          const sent = yield* bash(`node ${comment![1]}`, project, env)
          assert.isTrue(sent.ok, sent.out)
          assert.match(sent.out.trim(), /^msg_[0-9A-HJKMNP-TV-Z]{26} queued$/)

          // a member left out is named, by the client and by verifyWebhook
          writeFileSync(join(project, "named.mjs"), named)
          const result = yield* bash("node named.mjs", project, env)
          assert.isTrue(result.ok, result.out)
          const { send, verify } = JSON.parse(result.out)
          assert.match(send, /^Request validation failed: headers: Required member is missing/)
          assert.include(send, "switchboard.messages.send takes { payload, headers }")
          assert.match(verify, /^verifyWebhook\(rawBody, headers, secrets\): headers is missing/)
        }),
      { timeout: 300_000 }
    )
  })
})
