/**
 * The OpenAPI document passes Redocly's `recommended` rules (no error; offline: the document has
 * no remote reference), and every operation has a name and a description (what Swagger shows).
 */
import { OpenApi } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { createConfig, lintFromString } from "@redocly/openapi-core"
import { Api } from "@switchboard/api"

const spec = OpenApi.fromApi(Api.Api) as unknown as {
  paths: Record<string, Record<string, { operationId: string; summary?: string; description?: string }>>
  tags: Array<{ name: string; description?: string }>
}

describe("the OpenAPI document", () => {
  it("passes Redocly's recommended rules without an error", async () => {
    const config = await createConfig({ extends: ["recommended"] })
    const problems = await lintFromString({ source: JSON.stringify(spec), absoluteRef: "/openapi.json", config })
    const errors = problems.filter((p) => p.severity === "error").map((p) =>
      `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? "?"}`
    )
    assert.deepStrictEqual(errors, [])
  }, 60_000)

  it("names and describes every operation and every group", () => {
    const operations = Object.values(spec.paths).flatMap((item) => Object.values(item))
    assert.isAbove(operations.length, 60)
    for (const op of operations) {
      assert.isString(op.summary, `${op.operationId} has a summary`)
      assert.isAbove((op.description ?? "").length, 10, `${op.operationId} has a description`)
      assert.notMatch(op.summary!, /^\//, `${op.operationId}: a name, not a path`)
    }
    for (const tag of spec.tags) assert.isString(tag.description, `tag ${tag.name}`)
  })
})
