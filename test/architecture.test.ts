/**
 * The package rules of the README's "Architecture" section, on this checkout's sources
 * (`scripts/check-deps.ts`), and proof on fixtures that the checker finds each kind of violation.
 */
import { assert, describe, it } from "@effect/vitest"
import { resolve } from "node:path"
import { check, scan, type WorkspacePackage } from "../scripts/check-deps.js"

const pkg = (
  name: string,
  dir: string,
  dependencies: Record<string, string>,
  files: Record<string, string>
): WorkspacePackage => ({
  name,
  dir,
  dependencies,
  files: Object.entries(files).map(([path, text]) => ({ path: `${dir}/src/${path}`, text }))
})

describe("package dependencies", () => {
  it("every workspace import is declared and points down the layers", () => {
    const workspace = scan(resolve(import.meta.dirname, ".."))
    assert.includeMembers(workspace.map((p) => p.name), ["@switchboard/domain", "@switchboard/infra"])
    assert.deepStrictEqual(check(workspace), [])
  })

  it("reports an undeclared import, an upward import, a sideways import and a relative reach", () => {
    const workspace = [
      pkg("@switchboard/domain", "packages/domain", {}, {
        "Up.ts": `import { MessagesRepo } from "@switchboard/db"\nexport const x = MessagesRepo\n`
      }),
      pkg("@switchboard/db", "packages/db", { "@switchboard/domain": "0.1.0" }, {
        "Sideways.ts": `import type { Redis } from "@switchboard/infra"\n`,
        "Reach.ts": `import * as Box from "../../infra/src/SecretBox.js"\n`
      }),
      pkg("@switchboard/infra", "packages/infra", {}, {}),
      pkg("@switchboard/webhooks", "packages/webhooks", { "@switchboard/domain": "0.1.0" }, {
        "Fine.ts": `import { newId } from "@switchboard/domain"\n`,
        "Undeclared.ts": `import {\n  SecretBox\n} from "@switchboard/infra"\n`
      }),
      pkg("@switchboard/entities", "packages/entities", { "@switchboard/db": "0.1.0" }, {
        "Lazy.ts": `export const load = () => import("@switchboard/db")\n`
      })
    ]
    const violations = check(workspace)
    const about = (file: string) => violations.filter((line) => line.startsWith(file))
    assert.match(about("packages/domain/src/Up.ts").join(), /"@switchboard\/db", against the layers/)
    assert.match(about("packages/db/src/Sideways.ts").join(), /"@switchboard\/infra", against the layers/)
    assert.match(about("packages/db/src/Reach.ts").join(), /outside packages\/db/)
    assert.match(
      about("packages/webhooks/src/Undeclared.ts").join(),
      /not declared in packages\/webhooks\/package.json/
    )
    assert.deepStrictEqual(about("packages/webhooks/src/Fine.ts"), [])
    assert.deepStrictEqual(about("packages/entities/src/Lazy.ts"), [])
    assert.strictEqual(violations.length, 4, violations.join("\n"))
  })

  it("reports a declared dependency against the layers and a package without a layer", () => {
    const violations = check([
      pkg("@switchboard/db", "packages/db", { "@switchboard/entities": "0.1.0" }, {}),
      pkg("@switchboard/entities", "packages/entities", {}, {}),
      pkg("@switchboard/newthing", "packages/newthing", {}, {})
    ])
    assert.deepStrictEqual(violations, [
      "packages/db/package.json: declares @switchboard/entities, against the layers (@switchboard/db may import @switchboard/domain)",
      "packages/newthing: @switchboard/newthing has no layer: add it to LAYERS in scripts/check-deps.ts"
    ])
  })
})
