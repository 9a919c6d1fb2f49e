/**
 * How the suite runs (docs/TESTING.md "Tests"): the two pools of `vitest.config.ts` (the end-to-end
 * files in one of their own, so that one waiting for its turn never holds up a worker of the
 * others), the two commands (`npm test`, and `npm run test:faults` for the fault files), and the
 * service processes started from the production build (scripts/build.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync
} from "node:fs"
import * as Module from "node:module"
import { dirname, join, relative, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { createVitest } from "vitest/node"
import { isFresh } from "../scripts/build.js"
import { isEndToEnd, isFault, isProcessFile, processFiles } from "./support/EndToEnd.js"
import { freePort, startCommand } from "./support/Processes.js"
import { serviceEntry, withSourceMaps } from "./support/ServiceBundles.js"
import { slowFiles, SlowFirstSequencer } from "./support/SlowFirst.js"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")

/** The vitest projects a package.json script runs (`vitest run --project a --project b`). */
const projectsOf = (script: string): ReadonlyArray<string> => {
  const command: string = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")).scripts[script]
  assert.match(command, /^vitest run( --project [\w-]+)+$/, `${script}: ${command}`)
  return [...command.matchAll(/--project ([\w-]+)/g)].map((m) => m[1]!)
}

/** The test files a vitest run over `projects` (all of them when absent) takes, with their project and pool. */
const filesOf = async (projects?: ReadonlyArray<string>) => {
  const vitest = await createVitest("test", {
    root,
    config: resolve(root, "vitest.config.ts"),
    watch: false,
    ...(projects === undefined ? {} : { project: [...projects] })
  })
  try {
    return (await vitest.globTestSpecifications()).map((s) => ({
      file: relative(root, s.moduleId),
      project: s.project.name,
      pool: s.pool
    }))
  } finally {
    await vitest.close()
  }
}

/** Every `*.test.ts` in the repository, outside node_modules. */
const testFilesOnDisk = () =>
  readdirSync(root, { recursive: true, encoding: "utf8" })
    .filter((path) => path.endsWith(".test.ts") && !path.split(sep).includes("node_modules"))
    .filter((path) => !path.startsWith(`.tmp${sep}`) && !path.startsWith(`.node24${sep}`))
    .map((path) => path.split(sep).join("/"))
    .sort()

describe("the test files' pools", () => {
  it("runs every file once: the end-to-end ones and those that drive processes in worker threads of their own, the others in forks", async () => {
    const files = await filesOf()
    assert.strictEqual(new Set(files.map((f) => f.file)).size, files.length, "a file in two projects would run twice")
    assert.isAbove(files.filter((f) => isEndToEnd(f.file)).length, 10)
    for (const f of files) {
      const expected = isFault(f.file)
        ? isEndToEnd(f.file) ? ["faults", "threads"] : ["faults-in-process", "forks"]
        : isEndToEnd(f.file) || isProcessFile(f.file)
        ? ["end-to-end", "threads"]
        : ["in-process", "forks"]
      assert.deepStrictEqual([f.project, f.pool], expected, f.file)
    }
    // every listed process file exists (a renamed one would fall back to the in-process pool)
    for (const file of processFiles) assert.isTrue(existsSync(resolve(root, file)), file)
    assert.include(files.map((f) => f.file), "test/testHarness.test.ts")
    assert.include(files.map((f) => f.file), "packages/db/test/DispatchQueueRepo.test.ts")
  })

  it("runs the in-process files in workers without V8's memory reducer (no garbage collections while they wait)", () => {
    // this file runs in the in-process pool (its forks)
    assert.include(process.execArgv, "--no-memory-reducer")
  })

  it("runs every test file in exactly one of `npm test` and `npm run test:faults`, the fault files in the second", async () => {
    const test = (await filesOf(projectsOf("test"))).map((f) => f.file).sort()
    const faults = (await filesOf(projectsOf("test:faults"))).map((f) => f.file).sort()
    assert.deepStrictEqual(test.filter((f) => faults.includes(f)), [], "in both commands")
    assert.deepStrictEqual([...test, ...faults].sort(), testFilesOnDisk(), "every test file, in one of them")
    assert.deepStrictEqual(faults.filter((f) => !isFault(f)), [], "only fault files in test:faults")
    for (
      const name of [
        "chaosApiKill",
        "chaosPostgres",
        "chaosReceiver",
        "chaosRedis",
        "chaosSingletons",
        "contactImportFailover",
        "failover",
        "pausedApi",
        "pausedRunner",
        "qrFailover",
        "qrInboundFailover",
        "scaleRunners"
      ]
    ) {
      assert.include(faults, `test/${name}.e2e.test.ts`)
    }
    // the in-process files whose point is a QR channel's Postgres failing
    for (const name of ["qrDatabaseOutage", "qrGroupChatsOutage", "qrGroupMessagesOutage", "qrInputBound"]) {
      assert.include(faults, `test/${name}.test.ts`)
    }
    assert.include(test, "test/topology.e2e.test.ts")
    assert.include(test, "test/qrGroupChats.test.ts")
  })

  it("knows an end-to-end file and a fault file by its name", () => {
    assert.isTrue(isEndToEnd("/repo/test/chaosApiKill.e2e.test.ts"))
    assert.isFalse(isEndToEnd("/repo/test/messages.test.ts"))
    assert.isFalse(isEndToEnd("/repo/test/e2e.test.ts.orig"))
    assert.isTrue(isFault("/repo/test/chaosApiKill.e2e.test.ts"))
    assert.isTrue(isFault("/repo/test/qrInboundFailover.e2e.test.ts"))
    assert.isTrue(isFault("/repo/test/failover.e2e.test.ts"))
    assert.isTrue(isFault("/repo/test/pausedRunner.e2e.test.ts"))
    assert.isTrue(isFault("/repo/test/scaleRunners.e2e.test.ts"))
    assert.isFalse(isFault("/repo/test/topology.e2e.test.ts"))
    assert.isFalse(isFault("/repo/test/chaos.test.ts"))
    assert.isTrue(isFault("/repo/test/qrDatabaseOutage.test.ts"))
    assert.isTrue(isFault("/repo/test/qrGroupMessagesOutage.test.ts"))
    assert.isTrue(isFault("/repo/test/qrInputBound.test.ts"))
    assert.isFalse(isFault("/repo/test/qrGroupChats.test.ts"))
    assert.isFalse(isFault("/repo/test/qr/QrConnection.test.ts"))
  })
})

describe("the service processes", () => {
  it("start from the production build (npm run build's dist/), as npm start and the image do, not through tsx", () => {
    const scripts = (JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>
    }).scripts
    for (const name of ["api", "runner", "standalone", "admin"] as const) {
      const bundle = resolve(root, "dist", `${name}.mjs`)
      // the tests' processes load the source map only when asked (ServiceBundles.ts `withSourceMaps`)
      assert.deepStrictEqual(serviceEntry(name), withSourceMaps() ? ["--enable-source-maps", bundle] : [bundle])
      assert.isTrue(existsSync(bundle))
      assert.isTrue(existsSync(`${bundle}.map`), `${name}: its source map`)
      const script = scripts[name === "standalone" ? "start" : name === "admin" ? "admin" : `start:${name}`]
      // `exec`: npm's shell becomes node, so a signal to the pid npm start printed reaches the server
      assert.strictEqual(script, `exec node --enable-source-maps dist/${name}.mjs`)
      assert.isTrue(isFresh(name), `${name}: the global setup left it built from the sources as they are`)
    }
  })

  it("share the run's V8 compile cache (test/support/CompileCache.ts), where their Node has one", async () => {
    const dir = process.env["NODE_COMPILE_CACHE"]
    assert.isString(dir, "vitest.config.ts sets it for the run")
    // what a process started as the services are sees: the cache's folder (Node 22.8 and later say it)
    const child = startCommand(
      [process.execPath, "-e", "process.stdout.write(String(require('node:module').getCompileCacheDir?.() ?? 'none'))"],
      {},
      await freePort()
    )
    await new Promise((closed) => child.child.once("close", closed))
    // (the folder of its Node version in the cache's)
    if ("getCompileCacheDir" in Module) assert.include(child.output(), dir!)
    else assert.strictEqual(child.output(), "none")
  })

  it("are rebuilt when a file their bundle was made of changed since the build, and only then", () => {
    const dir = mkdtempSync(join(root, ".tmp", "build-"))
    try {
      const input = join(dir, "input.ts")
      writeFileSync(input, "export {}")
      writeFileSync(join(dir, "runner.mjs"), "")
      const manifest = { inputs: { [relative(root, input)]: statSync(input).mtimeMs } }
      writeFileSync(join(dir, "runner.build.json"), JSON.stringify(manifest))
      assert.isTrue(isFresh("runner", dir))
      assert.isFalse(isFresh("api", dir), "no bundle, no manifest")
      utimesSync(input, new Date(), new Date(Date.now() + 5000))
      assert.isFalse(isFresh("runner", dir), "an input changed")
      rmSync(input)
      assert.isFalse(isFresh("runner", dir), "an input is gone")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("the order the files start in", () => {
  it("names only test files that exist, each once", () => {
    assert.strictEqual(new Set(slowFiles).size, slowFiles.length)
    const onDisk = testFilesOnDisk()
    for (const file of slowFiles) assert.include(onDisk, file)
  })

  it("starts the listed files first, in the list's order, the others after them in vitest's order", async () => {
    // vitest's own order with nothing cached: unknown files keep their order
    const ctx = {
      config: { root },
      cache: { getFileTestResults: () => undefined, getFileStats: () => undefined }
    }
    const spec = (file: string) => ({ moduleId: resolve(root, file), project: { name: "in-process" } })
    const given = ["test/words.test.ts", slowFiles[2]!, "test/health.test.ts", slowFiles[0]!]
    const sorted = await new SlowFirstSequencer(ctx as never).sort(given.map(spec) as never)
    assert.deepStrictEqual(
      sorted.map((s) => relative(root, s.moduleId)),
      [slowFiles[0]!, slowFiles[2]!, "test/words.test.ts", "test/health.test.ts"]
    )
  })
})
