/**
 * docs/WEBHOOKS.md (docs/WEBHOOKS.md "Webhooks") shows a plain-Node verifier: extracted from the README as written, it must
 * accept what the service signs (one secret, or two during a rotation) and refuse the rest.
 */
import { assert, describe, it } from "@effect/vitest"
import { WebhookSigner } from "@switchboard/webhooks"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const readme = readFileSync(resolve(import.meta.dirname, "..", "docs", "WEBHOOKS.md"), "utf8")
const block = /<!-- verify-snippet:start -->\s*```js\n([\s\S]*?)```\s*<!-- verify-snippet:end -->/.exec(readme)

type Verify = (raw: Buffer, headers: Record<string, string>, secret: string, now?: number) => boolean

const load = async (): Promise<Verify> => {
  assert.isNotNull(block, "README holds the verify snippet")
  const file = join(mkdtempSync(join(tmpdir(), "sbt-snippet-")), "verify.mjs")
  writeFileSync(file, block![1]!)
  return ((await import(pathToFileURL(file).href)) as { verify: Verify }).verify
}

describe("README's webhook verification snippet", () => {
  it("accepts the service's signatures and refuses tampered, stale or foreign ones", async () => {
    const verify = await load()
    const body = JSON.stringify({ id: "evt_1", type: "message.delivered", data: { text: "héllo" } })
    const now = Date.now()
    const timestamp = Math.floor(now / 1000)
    const [current, previous] = ["whsec_" + "a".repeat(32), "whsec_" + "b".repeat(32)]
    const headers = (secrets: Array<string>, at = timestamp) => ({
      "x-webhook-timestamp": String(at),
      "x-webhook-signature": WebhookSigner.signatureHeader(secrets, at, body)
    })
    const raw = Buffer.from(body)
    assert.isTrue(verify(raw, headers([current]), current, now))
    // during a rotation both secrets sign: a receiver holding either one accepts
    assert.isTrue(verify(raw, headers([current, previous]), current, now))
    assert.isTrue(verify(raw, headers([current, previous]), previous, now))
    assert.isFalse(verify(Buffer.from(body.replace("héllo", "hello")), headers([current]), current, now), "tampered")
    assert.isFalse(verify(raw, headers([current], timestamp - 301), current, now), "stale")
    assert.isFalse(verify(raw, headers([current], timestamp + 301), current, now), "from the future")
    assert.isFalse(verify(raw, headers([previous]), current, now), "another secret")
    assert.isFalse(verify(raw, { "x-webhook-timestamp": String(timestamp) }, current, now), "no signature")
  })
})
