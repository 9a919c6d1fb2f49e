/**
 * The sandbox says what it is wherever a person meets it (docs/API.md "API"): a simulated network
 * where no phone ever receives anything, whose verification code is shown so that you verify a
 * recipient yourself, and what to do for a real number (a QR channel): in the allocation answer,
 * the README, the API guide, the console page and its guide.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { api, createKey, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const root = join(import.meta.dirname, "..")
const page = (path: string) => readFileSync(join(root, path), "utf8").replace(/\s+/g, " ")

const saysWhatItIs = (text: string, label: string) => {
  assert.include(text, "simulated network", label)
  assert.match(text, /no phone ever receives/, label)
  assert.match(text, /QR channel/, label)
}

describe("the sandbox says it is simulated", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("in the allocation answer", () =>
      Effect.gen(function*() {
        const client = yield* api((yield* createKey(yield* signUp(), { mode: "test" })).secret)
        const session = yield* client.sandbox.create()
        saysWhatItIs(session.verification.instructions, "allocation answer")
        assert.include(session.verification.instructions, "no SMS is sent")
        assert.include(session.verification.instructions, "docs/QR-CHANNELS.md")
      }))

    it.effect("on the console page", () =>
      Effect.gen(function*() {
        // raw: the console's HTML is no endpoint of the typed client
        const console = yield* request("GET", "/console")
        assert.strictEqual(console.status, 200)
        saysWhatItIs(console.text.replace(/\s+/g, " "), "console")
      }))

    it.effect("in the README, the API guide and the console guide", () =>
      Effect.sync(() => {
        for (const doc of ["README.md", "docs/API.md", "docs/CONSOLE.md"]) saysWhatItIs(page(doc), doc)
        assert.notInclude(page("README.md"), "verify your phone number")
      }))
  })
})
