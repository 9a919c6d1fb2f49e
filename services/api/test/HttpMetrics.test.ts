import { assert, describe, it } from "@effect/vitest"
import { routeOf } from "../src/HttpMetrics.js"
import { routeTable } from "../src/RouteTable.js"

describe("HttpMetrics.routeOf", () => {
  it("labels a request with its own route template, for every route of the contract", () => {
    const templates = [...new Set([...routeTable.requirements.keys()].map((key) => key.split(" ")[1]!))]
    assert.isAbove(templates.length, 20)
    for (const template of templates) {
      const path = template.replace(/:([^/]+)/g, (_, name: string) => `${name}_01ABCDEF`)
      assert.strictEqual(routeOf(`${path}?limit=5`), template, path)
    }
  })

  it("never labels with a raw path: unknown paths are `unmatched`, console files `/console`", () => {
    assert.strictEqual(routeOf("/v1/no-such-thing/42"), "unmatched")
    assert.strictEqual(routeOf("/wp-login.php"), "unmatched")
    assert.strictEqual(routeOf("/console/app.js"), "/console")
    assert.strictEqual(routeOf("/openapi.json"), "/openapi.json")
  })
})
