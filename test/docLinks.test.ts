/**
 * The README is a map (README "Documentation"): every relative link in README.md, docs/*.md and
 * the SDK's README reaches a file that exists and, when it names a section, a heading of that
 * file; every page under docs/ is reachable from the README's table; the status paragraph names
 * what the API serves, so it cannot fall behind a new group of routes.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Api } from "@switchboard/api"
import { Context } from "effect"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const pages = [
  "README.md",
  "packages/sdk/README.md",
  ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)
]
const read = (page: string) => readFileSync(join(root, page), "utf8")

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) => heading.trim().toLowerCase().replace(/[^\w\- ]/g, "").replace(/ /g, "-")

const withoutCode = (text: string) => text.replace(/```[\s\S]*?```/g, "")
const anchorsOf = (page: string) =>
  new Set([...withoutCode(read(page)).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)))
const linksOf = (page: string) =>
  [...withoutCode(read(page)).matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/.test(target))

describe("documentation links", () => {
  it("every relative link reaches a file, and the section it names", () => {
    const broken: Array<string> = []
    for (const page of pages) {
      for (const target of linksOf(page)) {
        const [file, anchor] = target.split("#") as [string, string | undefined]
        const path = file === "" ? page : relative(root, join(dirname(join(root, page)), file))
        if (!existsSync(join(root, path))) broken.push(`${page}: ${target} (no file)`)
        else if (anchor !== undefined && path.endsWith(".md") && !anchorsOf(path).has(anchor)) {
          broken.push(`${page}: ${target} (no such section)`)
        }
      }
    }
    assert.isAbove(pages.length, 8)
    assert.deepStrictEqual(broken, [])
  })

  it("reaches every docs/ page from the README's table of contents", () => {
    const linked = new Set(linksOf("README.md").map((t) => t.split("#")[0]))
    for (const page of pages.filter((p) => p.startsWith("docs/"))) {
      assert.isTrue(linked.has(page), `${page} in the README`)
    }
  })

  it("keeps the README short: the map, the two commands and the quickstart", () => {
    assert.isBelow(read("README.md").split("\n").length, 200)
  })

  it("says in the status paragraph what the API serves", () => {
    const status = /<!-- status:start -->([\s\S]*?)<!-- status:end -->/.exec(read("README.md"))?.[1] ?? ""
    const groups: Array<string> = []
    HttpApi.reflect(Api.Api, {
      onGroup({ group }) {
        const title = Context.getOption(group.annotations, OpenApi.Title)
        if (title._tag === "Some") groups.push(title.value)
      },
      onEndpoint() {}
    })
    assert.isAbove(groups.length, 8)
    // each group of routes by the word a reader looks for
    const words: Record<string, RegExp> = {
      Health: /end to end/,
      Auth: /user sessions/,
      Session: /user sessions/,
      "API keys": /API keys/,
      "Plan and usage": /plans and\s+usage/,
      Messages: /messages/,
      Channels: /channels/,
      Sandbox: /sandbox/,
      "QR pairing": /QR channels/,
      Contacts: /contacts/,
      "Contact imports": /CSV imports/,
      "Contact groups": /groups/,
      "Group chats": /group chats/,
      Templates: /templates/,
      Conversations: /conversations/,
      Webhooks: /webhooks/,
      Media: /media/
    }
    for (const group of groups) {
      const word = words[group]
      assert.isDefined(word, `the status paragraph's word for the "${group}" routes (add it to the paragraph and here)`)
      assert.match(status, word!, group)
    }
    for (const part of [/console/, /metrics/, /traces/]) assert.match(status, part)
  })
})
