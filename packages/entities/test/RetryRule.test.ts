/**
 * The rule over the runner's sources: a retry acts only on an effect whose error channel can hold
 * `DatabaseUnavailable`. `Effect.retry` never sees a defect, so a retry over an effect whose
 * database failures are defects compiles and retries nothing (the bug this rule keeps out). Runner
 * code retries through `TransientRetry.retryTransient` (packages/db), which refuses such an effect
 * at compile time, and restarts its loops through `Loops.supervised`; raw `Effect.retry`,
 * `Effect.retryOrElse` and `Stream.retry` are refused here.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"

const ROOT = join(import.meta.dirname, "..", "..", "..")

/** The runner's code: the entities, the providers, the runner service. */
const RUNNER_CODE = ["packages/entities/src", "packages/providers/src", "services/runner/src"]

const RAW_RETRY = /\b(Effect\.retry|Effect\.retryOrElse|Stream\.retry)\b/

const sources = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return name.endsWith(".ts") ? [path] : []
  })

/** The code of a file without its comments (a comment may name what it avoids). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1")

describe("retries in runner code", () => {
  it("go through TransientRetry (or Loops), never a raw Effect.retry", () => {
    const offenders: Array<string> = []
    for (const dir of RUNNER_CODE) {
      for (const file of sources(join(ROOT, dir))) {
        code(readFileSync(file, "utf8")).split("\n").forEach((line, i) => {
          if (RAW_RETRY.test(line)) offenders.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`)
        })
      }
    }
    assert.deepStrictEqual(offenders, [], "use TransientRetry.retryTransient (packages/db) instead")
  })

  it("the rule sees a raw retry, also in a pipe", () => {
    assert.isTrue(RAW_RETRY.test(code(`effect.pipe(Effect.retry({ times: 3 }))`)))
    assert.isTrue(RAW_RETRY.test(code(`Effect.retry(effect, schedule)`)))
    assert.isFalse(RAW_RETRY.test(code(`// an Effect.retry would not see a defect`)))
    assert.isFalse(RAW_RETRY.test(code(`/** Effect.retry(x) */`)))
    assert.isFalse(RAW_RETRY.test(code(`TransientRetry.retryTransient({ retries: 3 })`)))
  })
})
