/**
 * The api node is a cluster client: it speaks the entities' protocols and hosts no entity, so its
 * module graph must not reach Baileys nor the live provider and entity code (README, architecture).
 * Bundles `services/api/src/main.ts` with esbuild (nothing written), follows the workspace packages
 * and records every third-party package the workspace code imports.
 */
import { assert, describe, it } from "@effect/vitest"
import * as esbuild from "esbuild"
import { relative, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")

/** What the api node may load from `@switchboard/providers`: configuration, schemas, the auth-state repo. */
const PROVIDERS_ALLOWED = new Set([
  "packages/providers/src/contract.ts",
  "packages/providers/src/ProvidersConfig.ts",
  "packages/providers/src/SandboxNumbers.ts",
  "packages/providers/src/qr/QrConnectionEvent.ts",
  "packages/providers/src/qr/QrAuthStateRepo.ts"
])

/** What the api node may load from `@switchboard/entities`: the protocols and the cluster client. */
const ENTITIES_ALLOWED = new Set([
  "packages/entities/src/protocol.ts",
  "packages/entities/src/ChannelProtocol.ts",
  "packages/entities/src/MessageProtocol.ts",
  "packages/entities/src/WebhookEndpointProtocol.ts",
  "packages/entities/src/ProbeEntity.ts",
  "packages/entities/src/Cluster.ts",
  // the runner storage's lock refresh, which Cluster composes (no entity code)
  "packages/entities/src/LockRefresh.ts",
  "packages/entities/src/ClusterSettings.ts",
  // the fencing setting the runner's cluster layer provides (a reference and its layer, no entity code)
  "packages/entities/src/ShardFencing.ts",
  // the authenticated transport the cluster client connects with, its handshake and its secret
  "packages/entities/src/ClusterTransport.ts",
  "packages/entities/src/ClusterHandshake.ts",
  "packages/entities/src/ClusterAuthConfig.ts"
])

const packageOf = (specifier: string) =>
  specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!

const apiModuleGraph = async () => {
  const external = new Set<string>()
  const result = await esbuild.build({
    entryPoints: [resolve(root, "services/api/src/main.ts")],
    bundle: true,
    write: false,
    metafile: true,
    platform: "node",
    format: "esm",
    logLevel: "silent",
    plugins: [{
      name: "third-party-external",
      setup(build) {
        // workspace packages are followed; any other package is recorded and left out
        build.onResolve({ filter: /^[^./]/ }, (args) => {
          if (args.path.startsWith("@switchboard/") || args.path.startsWith("node:")) return undefined
          external.add(packageOf(args.path))
          return { path: args.path, external: true }
        })
      }
    }]
  })
  const modules = Object.keys(result.metafile.inputs).map((p) => relative(root, resolve(root, p)))
  return { modules, external }
}

describe("api node module graph", () => {
  it("reaches neither Baileys nor live provider or entity code", async () => {
    const { external, modules } = await apiModuleGraph()
    assert.isTrue(modules.includes("services/api/src/main.ts"), "the bundle was built from the api's main")
    assert.isTrue(modules.includes("packages/entities/src/ChannelProtocol.ts"), "the api speaks the Channel protocol")
    assert.isFalse(external.has("baileys"), "baileys is imported from the api node's graph")
    const providers = modules.filter((m) => m.startsWith("packages/providers/") && !PROVIDERS_ALLOWED.has(m))
    assert.deepStrictEqual(providers, [], "live provider modules in the api node's graph")
    const entities = modules.filter((m) => m.startsWith("packages/entities/") && !ENTITIES_ALLOWED.has(m))
    assert.deepStrictEqual(entities, [], "live entity modules in the api node's graph")
  }, 60_000)
})
