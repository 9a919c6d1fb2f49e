/**
 * Every package `npm install` puts in place runs on the Node versions the project supports
 * (package.json `engines`, README "Node versions": 20 and newer): the lock file's `engines.node` of
 * each package allows the oldest supported major line, so an install on Node 20 prints no
 * `EBADENGINE` warning (kubernetes-models 5 wanted Node 22 and printed 20 of them; 4.5.1 validates
 * the same manifests, test/kubernetes.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import semver from "semver"

const root = join(import.meta.dirname, "..")
const read = (file: string) => JSON.parse(readFileSync(join(root, file), "utf8"))

describe("Node engines", () => {
  it("every locked package takes the oldest Node line the project supports", () => {
    const supported: string = read("package.json").engines.node
    const oldest = semver.minVersion(supported)!
    const line = `>=${oldest.major}.0.0 <${oldest.major + 1}.0.0`
    const lock = read("package-lock.json") as {
      packages: Record<string, { readonly engines?: { readonly node?: string } | ReadonlyArray<string> }>
    }
    const refusing = Object.entries(lock.packages).flatMap(([path, pkg]) => {
      const range = Array.isArray(pkg.engines) ? undefined : (pkg.engines as { node?: string } | undefined)?.node
      return range !== undefined && semver.validRange(range) !== null && !semver.intersects(range, line)
        ? [`${path.replace(/^.*node_modules\//, "")} wants node ${range}`]
        : []
    })
    assert.deepStrictEqual(refusing, [], `packages that refuse Node ${oldest.major}`)
  })
})
