/**
 * The package rules of the README's "Architecture" section, on this checkout's sources
 * (`scripts/check-deps.ts`), and proof on fixtures that the checker finds each kind of violation:
 * imports against the layers, `any`, id casts, files over 350 lines that do
 * not say why, and contract or handler files with more than one group.
 */
import { assert, describe, it } from "@effect/vitest"
import { resolve } from "node:path"
import { check, checkSources, HARD_MAX_LINES, MAX_LINES, scan, type WorkspacePackage } from "../scripts/check-deps.js"

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

describe("package sources", () => {
  it("no any and no unexplained file over 350 lines in packages/*/src", () => {
    assert.deepStrictEqual(checkSources(scan(resolve(import.meta.dirname, ".."))), [])
  })

  it("reports any in code and types, not in comments, strings, templates, regular expressions or names", () => {
    const violations = checkSources([
      pkg("@switchboard/domain", "packages/domain", {}, {
        "Typed.ts": [
          `/** Accepts any string. */`,
          `// any`,
          `export const a = "any" + 'any'`,
          "export const b = `any ${`nested any ${1}`} any`",
          `export const c = /any/.test(a) ? Effect.any : many`,
          `export const d = (x: unknown): x is Company => x !== null`
        ].join("\n"),
        "Loose.ts": [
          `export const e = (r: any) => r`,
          `export const f = g as any`,
          "export const h = `${<any>i}`",
          `export type J = Array<any>`
        ].join("\n")
      }),
      pkg("@switchboard/service-api", "services/api", {}, { "Out.ts": `export const k: any = 1` })
    ])
    assert.deepStrictEqual(violations, [
      `packages/domain/src/Loose.ts:1: uses \`any\` (give it a type; see docs/ARCHITECTURE.md "Architecture")`,
      `packages/domain/src/Loose.ts:2: uses \`any\` (give it a type; see docs/ARCHITECTURE.md "Architecture")`,
      `packages/domain/src/Loose.ts:3: uses \`any\` (give it a type; see docs/ARCHITECTURE.md "Architecture")`,
      `packages/domain/src/Loose.ts:4: uses \`any\` (give it a type; see docs/ARCHITECTURE.md "Architecture")`,
      // services are held to the same rule
      `services/api/src/Out.ts:1: uses \`any\` (give it a type; see docs/ARCHITECTURE.md "Architecture")`
    ])
  })

  it("reports every id cast (as X[\"id\"], as X[\"..._id\"], as `x_${string}`) in code, a hot path's too", () => {
    const violations = checkSources([
      pkg("@switchboard/db", "packages/db", {}, {
        "Cast.ts": [
          `export const a = (r: Row) => r.id as Message["id"]`,
          `export const b = (r: Row) => ({ id: r.id as Channel['id'] })`,
          `// hot path: a comment excuses nothing`,
          ``,
          `export const c = r.id as Contact["id"]`,
          // a member named ..._id, a namespaced type, and a template literal id type count too
          `export const g = r.channel_id as Message["channel_id"]`,
          `export const i = id as Messaging.Message["conversation_id"]`,
          `export const j = { contact_id: id as \`cnt_\${string}\` }`
        ].join("\n"),
        "Marked.ts": [
          `// hot path: no decode per move (bench/RESULTS.md 1)`,
          `const d = id as Message["id"]`,
          `const e = id as Message["id"] // hot path: no decode per receipt (bench/RESULTS.md 1)`
        ].join("\n"),
        // named in a comment or a string, or another member, a cast does not count
        "Said.ts": [
          `/** never \`r.id as Message["id"]\` */`,
          `// r.id as Message["id"]`,
          `export const f = 'r.id as Message["id"]'`,
          `// id as \`cnt_\${string}\``,
          `export const k = r.protocol as Config["protocol"]`,
          "export const l = `ws_${string}`"
        ].join("\n")
      }),
      pkg("@switchboard/service-api", "services/api", {}, { "Out.ts": `export const h = row.id as ApiKey["id"]` })
    ])
    const cast = (at: string) =>
      `${at}: casts an id (as X["id"], as \`x_\${string}\`): decode it where it enters (a row's schema, the contract's IdRef) or check it with Ids.isId on a hot path (docs/ARCHITECTURE.md "Rows decode to domain types")`
    assert.deepStrictEqual(violations, [
      cast("packages/db/src/Cast.ts:1"),
      cast("packages/db/src/Cast.ts:2"),
      cast("packages/db/src/Cast.ts:5"),
      cast("packages/db/src/Cast.ts:6"),
      cast("packages/db/src/Cast.ts:7"),
      cast("packages/db/src/Cast.ts:8"),
      // a hot path types its ids with a check (Ids.isId), never a cast
      cast("packages/db/src/Marked.ts:2"),
      cast("packages/db/src/Marked.ts:3"),
      // services are held to the same rule
      cast("services/api/src/Out.ts:1")
    ])
  })

  it("reports a row type asserted (sql<Row>) in packages/db/src, not in comments, strings or the migration machinery", () => {
    const violations = checkSources([
      pkg("@switchboard/db", "packages/db", {}, {
        "Asserted.ts": [
          `const a = yield* sql<{ id: string }>\`SELECT id FROM t\``,
          `const b = yield* sql<`,
          `  { n: number }`,
          `>\`SELECT count(*)::int AS n FROM t\``,
          `const c = yield* sql.unsafe<{ id: string }>("SELECT id FROM t")`
        ].join("\n"),
        "Decoded.ts": [
          `// not sql<Row>: decoded`,
          `const d = yield* decodeIds(yield* sql\`SELECT id FROM t WHERE n < 2\`)`,
          `const e = "sql<Row>"`,
          `const f = sqlite<number>(1)`
        ].join("\n"),
        "Partitions.ts": `const g = yield* sql<{ name: string }>\`SELECT relname AS name FROM pg_class\``
      }),
      // other packages hold no statements
      pkg("@switchboard/domain", "packages/domain", {}, { "Other.ts": `const h = sql<number>(1)` })
    ])
    const asserted = (at: string) =>
      `${at}: asserts a row type (sql<Row>): decode the rows with a schema (Rows.decodeRows; docs/ARCHITECTURE.md "Rows decode to domain types")`
    assert.deepStrictEqual(violations, [
      asserted("packages/db/src/Asserted.ts:1"),
      asserted("packages/db/src/Asserted.ts:2"),
      asserted("packages/db/src/Asserted.ts:5")
    ])
  })

  it("reports a file over 350 lines unless its header says why", () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `export const v${i} = ${i}`).join("\n") + "\n"
    const violations = checkSources([
      pkg("@switchboard/db", "packages/db", {}, {
        "Short.ts": `/** Fits. */\n${body(MAX_LINES - 1)}`,
        "Long.ts": `/** Does not fit. */\n${body(MAX_LINES)}`,
        "Said.ts": `/**\n * A module.\n *\n * Over 350 lines on purpose: one actor.\n */\n${body(MAX_LINES)}`,
        "Elsewhere.ts": `/** A module. */\n${body(MAX_LINES)}// Over 350 lines on purpose, but not in the header\n`
      })
    ])
    assert.deepStrictEqual(violations, [
      `packages/db/src/Long.ts: ${
        MAX_LINES + 1
      } lines, over ${MAX_LINES} without a header line saying why ("Over 350 lines ...")`,
      `packages/db/src/Elsewhere.ts: ${
        MAX_LINES + 2
      } lines, over ${MAX_LINES} without a header line saying why ("Over 350 lines ...")`
    ])
  })
  it("reports a file over 500 lines in packages or services whatever its header says", () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `export const v${i} = ${i}`).join("\n") + "\n"
    const said = `/**\n * A module.\n *\n * Over 350 lines on purpose: one actor.\n */\n`
    const violations = checkSources([
      pkg("@switchboard/db", "packages/db", {}, {
        "Fits.ts": `${said}${body(HARD_MAX_LINES - 5)}`,
        "Long.ts": `${said}${body(HARD_MAX_LINES)}`
      }),
      pkg("@switchboard/service-api", "services/api", {}, { "Console.ts": `/** Ui. */\n${body(HARD_MAX_LINES)}` })
    ])
    assert.deepStrictEqual(violations, [
      `packages/db/src/Long.ts: ${
        HARD_MAX_LINES + 5
      } lines, over ${HARD_MAX_LINES}: split it by job (docs/ARCHITECTURE.md "Architecture")`,
      `services/api/src/Console.ts: ${
        HARD_MAX_LINES + 1
      } lines, over ${HARD_MAX_LINES}: split it by job (docs/ARCHITECTURE.md "Architecture")`
    ])
  })

  it("reports a contract file with more than one HttpApiGroup", () => {
    const group = (name: string, className = name) =>
      `export class ${className} extends HttpApiGroup.make("${name}") {}\n`
    const violations = checkSources([
      pkg("@switchboard/api", "packages/api", {}, {
        "OneApi.ts": group("one", "OneApi"),
        "TwoApi.ts": group("a") + group("b"),
        // a group named in a comment or a string does not count
        "Said.ts": `${group("c", "Said")}// HttpApiGroup.make( in a comment\nconst s = "HttpApiGroup.make("\n`
      })
    ])
    assert.deepStrictEqual(violations, [
      "packages/api/src/TwoApi.ts: 2 HttpApiGroups, one per contract file (a file of its own for each group)"
    ])
  })
  it("reports a contract file whose group's class is not named after the file", () => {
    const violations = checkSources([
      pkg("@switchboard/api", "packages/api", {}, {
        "MessagingApi.ts": `export class MessagesApi extends HttpApiGroup.make("messages") {}\n`,
        "ChannelsApi.ts": `export class ChannelsApi extends HttpApiGroup.make("channels") {}\n`
      })
    ])
    assert.deepStrictEqual(violations, [
      "packages/api/src/MessagingApi.ts: its group's class is MessagesApi; name it MessagingApi, after its file (XApi.ts exports XApi)"
    ])
  })
  it("reports a handler file with more than one group, or a group handled outside its contract file's name", () => {
    const contract = (name: string) =>
      `export class ${name[0]!.toUpperCase()}${name.slice(1)}Api extends HttpApiGroup.make("${name}") {}\n`
    const handlers = (name: string) =>
      `export const H = HttpApiBuilder.group(Api, "${name}", (handlers) => Effect.succeed(handlers))\n`
    const violations = checkSources([
      pkg("@switchboard/api", "packages/api", {}, {
        "OneApi.ts": contract("one"),
        "TwoApi.ts": contract("two"),
        "ThreeApi.ts": contract("three")
      }),
      pkg("@switchboard/service-api", "services/api", {}, {
        "handlers/OneHandlers.ts": handlers("one"),
        // named in a comment or a string, a group does not count
        "handlers/TwoHandlers.ts": `${
          handlers("two")
        }// HttpApiBuilder.group(Api, "three"\nconst s = "HttpApiBuilder.group(Api, 'x'"\n`,
        "handlers/Both.ts": handlers("one") + handlers("two"),
        // wrapped by the formatter, still one group, in the wrong file
        "handlers/Elsewhere.ts":
          `export const H = HttpApiBuilder.group(\n  Api,\n  "three",\n  (h) => Effect.succeed(h)\n)\n`
      })
    ])
    assert.deepStrictEqual(violations, [
      "services/api/src/handlers/Both.ts: 2 HttpApiBuilder.groups, one per handler file (XApi.ts -> handlers/XHandlers.ts)",
      "services/api/src/handlers/Elsewhere.ts: handles group \"three\", whose handlers belong in services/api/src/handlers/ThreeHandlers.ts (XApi.ts -> handlers/XHandlers.ts)"
    ])
  })
  it("reports a flat export in a barrel that exports namespaces only", () => {
    const violations = checkSources([
      pkg("@switchboard/infra", "packages/infra", {}, {
        "index.ts": `export * as Redis from "./Redis.js"\nexport * from "./Logging.js"\nexport { a } from "./A.js"\n`,
        "Redis.ts": `export * from "./Other.js"\n`
      }),
      pkg("@switchboard/sdk", "packages/sdk", {}, { "index.ts": `export * from "./Client.js"\n` })
    ])
    assert.deepStrictEqual(violations, [
      "packages/infra/src/index.ts:2: a flat export; this barrel exports namespaces only (export * as X from \"./X.js\")",
      "packages/infra/src/index.ts:3: a flat export; this barrel exports namespaces only (export * as X from \"./X.js\")"
    ])
  })
})
