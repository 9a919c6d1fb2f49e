import { assert, describe, it } from "@effect/vitest"
import { filterSignalLines } from "../src/qr/SignalConsole.js"

describe("libsignal's console lines", () => {
  it("drops the session dumps (they carry Signal keys) and lets every other line through", () => {
    const written: Array<string> = []
    const write = (...args: Array<unknown>) => void written.push(args.map((a) => JSON.stringify(a)).join(" "))
    const target = { log: write, info: write, warn: write, error: write, debug: write }
    filterSignalLines(target)
    target.info("Closing session:", { rootKey: "SECRET-ROOT-KEY" })
    target.warn("Closing open session in favor of incoming prekey bundle")
    target.info("Opening session:", { chainKey: "SECRET-CHAIN-KEY" })
    target.info("Removing old closed session:", { key: "SECRET-OLD" })
    target.info("an unrelated line", { n: 1 })
    target.error(new Error("a real error"))
    const all = written.join("\n")
    assert.notInclude(all, "SECRET")
    assert.notInclude(all, "session")
    assert.include(all, "an unrelated line")
    assert.strictEqual(written.length, 2)
  })
})
