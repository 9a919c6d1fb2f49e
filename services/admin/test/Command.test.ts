/**
 * The operator CLI reads its command line before it opens anything (`Command.parse`, pure): each
 * mistake is a one-line refusal, and a valid line is the command the operator meant.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as Command from "../src/Command.js"

const refusal = (argv: ReadonlyArray<string>) =>
  Either.getLeft(Command.parse(argv)).pipe((o) => o._tag === "Some" ? o.value : undefined)

describe("the operator CLI's command line", () => {
  it("refuses a QR cap above the platform's, a warm-up above it, and anything but a whole number", () => {
    assert.include(
      refusal(["qr-limit", "--workspace", "ws_1", "--limit", "201"]),
      "never raised above the platform's 200"
    )
    assert.include(refusal(["qr-limit", "--workspace", "ws_1", "--limit", "1.5"]), "whole number from 0 to 200")
    assert.include(refusal(["qr-limit", "--workspace", "ws_1", "--limit=-3"]), "whole number from 0 to 200")
    assert.include(refusal(["qr-warm-up", "--workspace", "ws_1", "--channel", "ch_1", "--max", "500"]), "--max must be")
    assert.strictEqual(refusal(["qr-limit", "--workspace", "ws_1"]), "Give one of --limit N or --clear")
    assert.strictEqual(
      refusal(["qr-warm-up", "--workspace", "ws_1", "--channel", "ch_1", "--off", "--default"]),
      "Give one of --off, --max N or --default"
    )
  })

  it("names a missing option, an unknown plan, an unknown option, and shows the usage for an unknown command", () => {
    assert.strictEqual(refusal(["suspend"]), "--id is required")
    assert.strictEqual(refusal(["create-user", "--email", "a@example.com"]), "--password is required")
    assert.strictEqual(
      refusal(["set-plan", "--workspace", "ws_1", "--plan", "gold"]),
      "--plan must be one of free, starter, growth, enterprise"
    )
    assert.include(refusal(["list-users", "--bogus"]), "Unknown option '--bogus'")
    assert.strictEqual(refusal(["frobnicate"]), Command.USAGE)
  })

  it("reads a valid line as the command meant", () => {
    assert.deepStrictEqual(
      Command.parse(["qr-limit", "--workspace", "ws_1", "--channel", "ch_1", "--limit", "200"]),
      Either.right({ _tag: "qr-limit" as const, workspace: "ws_1", channel: "ch_1", limit: 200 })
    )
    assert.deepStrictEqual(
      Command.parse(["qr-limit", "--workspace", "ws_1", "--clear"]),
      Either.right({ _tag: "qr-limit" as const, workspace: "ws_1", channel: undefined, limit: undefined })
    )
    assert.deepStrictEqual(
      Command.parse(["override", "--workspace", "ws_1", "--entitlement", "qr_channels", "--unlimited"]),
      Either.right({ _tag: "override" as const, workspace: "ws_1", entitlement: "qr_channels", value: null })
    )
    assert.deepStrictEqual(
      Command.parse(["create-user", "--email", "a@example.com", "--password", "pw", "--name", "A", "--workspace", "W"]),
      Either.right({
        _tag: "create-user" as const,
        email: "a@example.com",
        password: "pw",
        name: "A",
        workspace: "W",
        plan: "free" as const,
        verified: false,
        ifMissing: false
      })
    )
  })
})
