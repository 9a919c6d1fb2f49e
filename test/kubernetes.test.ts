/**
 * The Kubernetes manifests (deploy/kubernetes, docs/OPERATING.md "Kubernetes") render with
 * `kubectl kustomize` and every object they make passes the Kubernetes schemas (the pinned
 * `kubernetes-models` validators: types, required fields, enums); then what an operator relies on:
 * runners reachable at their pod IP and listening there only, the cluster port closed to everyone
 * but api nodes and runners, probes on the paths the services answer, budgets and autoscalers that
 * point at what exists, and every setting the code reads wired or documented as optional.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { parseAllDocuments } from "yaml"

const root = resolve(import.meta.dirname, "..")
const read = (file: string) => readFileSync(join(root, file), "utf8")

interface EnvVar {
  readonly name: string
  readonly value?: string
  readonly valueFrom?: {
    readonly fieldRef?: { readonly fieldPath: string }
    readonly secretKeyRef?: { readonly name: string; readonly key: string; readonly optional?: boolean }
  }
}
interface Probe {
  readonly httpGet?: { readonly path: string; readonly port: string | number }
}
interface Container {
  readonly name: string
  readonly image: string
  readonly args?: ReadonlyArray<string>
  readonly env?: ReadonlyArray<EnvVar>
  readonly envFrom?: ReadonlyArray<{ readonly configMapRef?: { readonly name: string } }>
  readonly ports?: ReadonlyArray<{ readonly name: string; readonly containerPort: number }>
  readonly readinessProbe?: Probe
  readonly livenessProbe?: Probe
  readonly startupProbe?: Probe
  readonly resources?: { readonly requests?: Record<string, string> }
  readonly volumeMounts?: ReadonlyArray<{ readonly name: string; readonly mountPath: string }>
  readonly securityContext?: { readonly readOnlyRootFilesystem?: boolean }
}
interface PodTemplate {
  readonly metadata: { readonly labels: Record<string, string> }
  readonly spec: { readonly containers: ReadonlyArray<Container> }
}
interface K8sObject {
  readonly apiVersion: string
  readonly kind: string
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> }
  readonly data?: Record<string, string>
  readonly spec?: any
}

const kubectl = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8" })

/** `kubectl kustomize <dir>`: the objects it renders. */
const render = (dir: string): ReadonlyArray<K8sObject> => {
  const result = spawnSync("kubectl", ["kustomize", join(root, dir)], { encoding: "utf8" })
  assert.strictEqual(result.status, 0, `kubectl kustomize ${dir}: ${result.stderr}`)
  return parseAllDocuments(result.stdout).map((d) => d.toJS() as K8sObject)
}

/** The pinned validators by `apiVersion` (`kubernetes-models/apps/v1` exports `Deployment`, ...). */
const models: Record<string, () => Promise<object>> = {
  "v1": () => import("kubernetes-models/v1"),
  "apps/v1": () => import("kubernetes-models/apps/v1"),
  "batch/v1": () => import("kubernetes-models/batch/v1"),
  "policy/v1": () => import("kubernetes-models/policy/v1"),
  "networking.k8s.io/v1": () => import("kubernetes-models/networking.k8s.io/v1"),
  "autoscaling/v2": () => import("kubernetes-models/autoscaling/v2")
}

const validate = async (object: K8sObject) => {
  const load = models[object.apiVersion]
  assert.isDefined(load, `${object.apiVersion}: a stable API version the test knows`)
  const module = (await load!()) as Record<string, new(data: unknown) => { validate(): void }>
  const Model = module[object.kind]
  assert.isDefined(Model, `${object.apiVersion} ${object.kind} is a Kubernetes kind`)
  new Model!(object).validate()
}

const overlays = readdirSync(join(root, "deploy/kubernetes/overlays"))

const byKind = (objects: ReadonlyArray<K8sObject>, kind: string) => objects.filter((o) => o.kind === kind)
const named = (objects: ReadonlyArray<K8sObject>, kind: string, name: string) => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name)
  assert.isDefined(found, `${kind} ${name}`)
  return found!
}
const podTemplate = (o: K8sObject): PodTemplate => o.spec.template as PodTemplate
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v)

describe("deploy/kubernetes", () => {
  it("kubectl is installed (.ci/run installs it)", () => {
    assert.strictEqual(kubectl.status, 0, `kubectl version --client: ${kubectl.error?.message ?? kubectl.stderr}`)
  })

  it.each(["base", ...overlays.map((o) => `overlays/${o}`)])(
    "%s renders, and every object passes the Kubernetes schemas",
    async (dir) => {
      const objects = render(`deploy/kubernetes/${dir}`)
      assert.isAtLeast(objects.length, 9)
      for (const object of objects) await validate(object)
    }
  )

  it("the schema check refuses what Kubernetes would refuse", async () => {
    const [deployment] = byKind(render("deploy/kubernetes/base"), "Deployment")
    const broken = JSON.parse(JSON.stringify(deployment)) as K8sObject
    broken.spec.template.spec.containers[0].ports[0].containerPort = "http"
    let refused = ""
    try {
      await validate(broken)
    } catch (e) {
      refused = String(e)
    }
    assert.include(refused, "containerPort must be integer")
  })

  describe.each(overlays)("overlays/%s", (overlay) => {
    const objects = render(`deploy/kubernetes/overlays/${overlay}`)
    const api = named(objects, "Deployment", "switchboard-api")
    const runner = named(objects, "Deployment", "switchboard-runner")
    const config = named(objects, "ConfigMap", "switchboard-config").data!
    const workloads = [api, runner, named(objects, "Job", "switchboard-migrate")]

    it("runs the image the overlay names, each role by its entrypoint argument, with resource requests", () => {
      for (
        const [workload, args] of [[api, ["api"]], [runner, ["runner"]], [workloads[2]!, ["admin", "migrate"]]] as const
      ) {
        const [container] = podTemplate(workload).spec.containers
        assert.notStrictEqual(container!.image, "switchboard", "the overlay sets the image")
        assert.deepStrictEqual(container!.args, args)
        assert.isDefined(container!.resources?.requests?.["cpu"], workload.metadata.name)
        assert.isDefined(container!.resources?.requests?.["memory"], workload.metadata.name)
      }
      assert.strictEqual(config["NODE_ENV"], "production")
    })

    it("gives each runner its pod IP as its cluster address and listener, never every interface", () => {
      const [container] = podTemplate(runner).spec.containers
      const env = Object.fromEntries(container!.env!.map((e) => [e.name, e]))
      assert.strictEqual(env["POD_IP"]?.valueFrom?.fieldRef?.fieldPath, "status.podIP")
      assert.strictEqual(env["HOST"]?.value, "$(POD_IP)")
      assert.strictEqual(env["METRICS_HOST"]?.value, "$(POD_IP)")
      assert.notProperty(env, "LISTEN_HOST", "the runner listens where it is reached (HOST)")
      const cluster = container!.ports!.find((p) => p.name === "cluster")
      assert.strictEqual(String(cluster?.containerPort), config["PORT"])
    })

    it("gives each runner a writable volume where it keeps provider input during a database outage", () => {
      const [container] = podTemplate(runner).spec.containers
      const env = Object.fromEntries(container!.env!.map((e) => [e.name, e.value]))
      // as the runner reads it: PROVIDER_INPUT_SPOOL_DIR, else <DATA_DIR>/provider-input, DATA_DIR from the image
      const dataDir = env["DATA_DIR"] ?? config["DATA_DIR"] ?? /DATA_DIR=(\S+)/.exec(read("Dockerfile"))?.[1]
      const spoolDir = env["PROVIDER_INPUT_SPOOL_DIR"] ?? config["PROVIDER_INPUT_SPOOL_DIR"] ??
        `${dataDir}/provider-input`
      assert.isTrue(container!.securityContext?.readOnlyRootFilesystem, "the case this guards")
      const mount = container!.volumeMounts?.find((m) => spoolDir.startsWith(`${m.mountPath}/`))
      assert.isDefined(mount, `nothing writable at ${spoolDir}: the spool would keep nothing`)
    })

    it("lets only api nodes and runners reach the cluster port", () => {
      const policy = named(objects, "NetworkPolicy", "switchboard-runner")
      assert.isTrue(selects(policy.spec.podSelector.matchLabels, podTemplate(runner).metadata.labels))
      const rules = policy.spec.ingress as ReadonlyArray<
        {
          from?: ReadonlyArray<
            { podSelector: { matchExpressions: ReadonlyArray<{ key: string; values: ReadonlyArray<string> }> } }
          >
          ports: ReadonlyArray<{ port: string }>
        }
      >
      const clusterRules = rules.filter((r) => r.ports.some((p) => p.port === "cluster"))
      assert.lengthOf(clusterRules, 1)
      const from = clusterRules[0]!.from!
      assert.lengthOf(from, 1)
      const components = from[0]!.podSelector.matchExpressions.find((e) => e.key === "app.kubernetes.io/component")
      assert.deepStrictEqual([...components!.values].sort(), ["api", "runner"])
      // no other rule opens it
      for (const rule of rules.filter((r) => r !== clusterRules[0])) {
        assert.notInclude(rule.ports.map((p) => p.port), "cluster")
      }
    })

    it("probes the api's /ready at start and /health after, and the runner's /ready and /health on its metrics listener", () => {
      const [apiContainer] = podTemplate(api).spec.containers
      // an outage of Redis or the database, which every api pod shares, must not empty the Service
      assert.deepStrictEqual(apiContainer!.startupProbe?.httpGet, { path: "/ready", port: "http" })
      assert.deepStrictEqual(apiContainer!.readinessProbe?.httpGet, { path: "/health", port: "http" })
      assert.deepStrictEqual(apiContainer!.livenessProbe?.httpGet, { path: "/health", port: "http" })
      assert.strictEqual(
        String(apiContainer!.ports!.find((p) => p.name === "http")?.containerPort),
        config["HTTP_PORT"]
      )
      const [runnerContainer] = podTemplate(runner).spec.containers
      assert.deepStrictEqual(runnerContainer!.readinessProbe?.httpGet, { path: "/ready", port: "metrics" })
      assert.deepStrictEqual(runnerContainer!.livenessProbe?.httpGet, { path: "/health", port: "metrics" })
      assert.strictEqual(
        String(runnerContainer!.ports!.find((p) => p.name === "metrics")?.containerPort),
        config["METRICS_PORT"]
      )
    })

    it("points every Service, budget and autoscaler at pods and Deployments that exist", () => {
      for (const service of byKind(objects, "Service")) {
        const matches = [api, runner].filter((d) => selects(service.spec.selector, podTemplate(d).metadata.labels))
        assert.lengthOf(matches, 1, service.metadata.name)
      }
      const budgets = byKind(objects, "PodDisruptionBudget")
      for (const deployment of [api, runner]) {
        const covering = budgets.filter((b) =>
          selects(b.spec.selector.matchLabels, podTemplate(deployment).metadata.labels)
        )
        assert.lengthOf(covering, 1, `${deployment.metadata.name} has one PodDisruptionBudget`)
      }
      for (const hpa of byKind(objects, "HorizontalPodAutoscaler")) {
        named(objects, hpa.spec.scaleTargetRef.kind, hpa.spec.scaleTargetRef.name)
        assert.isAtMost(hpa.spec.minReplicas, hpa.spec.maxReplicas)
      }
      if (overlay === "large") {
        const metrics = byKind(objects, "HorizontalPodAutoscaler").flatMap((h) =>
          (h.spec.metrics as ReadonlyArray<
            { type: string; resource?: { name: string }; external?: { metric: { name: string } } }
          >)
            .map((m) => m.resource?.name ?? m.external?.metric.name)
        )
        assert.sameMembers(metrics, ["cpu", "switchboard_dispatch_backlogged_channels"])
      }
    })

    it("wires the same settings into every workload: the ConfigMap and the Secret's keys", () => {
      const wiring = workloads.map((w) => {
        const [container] = podTemplate(w).spec.containers
        return {
          configMaps: container!.envFrom!.map((e) => e.configMapRef?.name),
          secrets: container!.env!.filter((e) => e.valueFrom?.secretKeyRef).map((e) =>
            `${e.name}=${e.valueFrom!.secretKeyRef!.key}${e.valueFrom!.secretKeyRef!.optional ? "?" : ""}`
          ).sort()
        }
      })
      for (const w of wiring) assert.deepStrictEqual(w, wiring[0])
      assert.deepStrictEqual(wiring[0]!.configMaps, ["switchboard-config"])
    })
  })
})

// ---- every setting the code reads is wired or documented as optional ----

/** The environment variables the code under packages/ and services/ reads (tests and test seams left out). */
const settingsTheCodeReads = (): ReadonlySet<string> => {
  const names = new Set<string>()
  const patterns = [
    // Config.string("X"), Config.literal("a", "b")("X"), optionalString("X"), Config.option(Config.string(`X_${...}`))
    /(?:Config\.\w+(?:\([^()]*\))?|optionalString)\(\s*["`]([A-Z][A-Z0-9_]+)(?:\$\{[^}]*\})?["`]/g,
    /env\[\s*"([A-Z][A-Z0-9_]+)"\s*\]/g,
    /process\.env\.([A-Z][A-Z0-9_]+)/g
  ]
  const scan = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (entry.name !== "testing") scan(path)
      } else if (entry.name.endsWith(".ts")) {
        const text = readFileSync(path, "utf8")
        for (const pattern of patterns) for (const m of text.matchAll(pattern)) names.add(m[1]!)
      }
    }
  }
  for (const top of ["packages", "services"]) {
    // the SDK is what users install: it reads nothing of the server's
    for (const pkg of readdirSync(join(root, top)).filter((p) => p !== "sdk")) scan(join(root, top, pkg, "src"))
  }
  return names
}

/** The first column of docs/CONFIGURATION.md's settings table: each `NAME` (a family as `RATE_LIMIT_<RULE>`). */
const documented = (): ReadonlyArray<string> =>
  read("docs/CONFIGURATION.md").split("\n").filter((l) => l.startsWith("| `")).flatMap((l) =>
    [...l.split("|")[1]!.matchAll(/`([A-Z][A-Z0-9_<>]*)`/g)].map((m) => m[1]!)
  )

describe("settings", () => {
  const objects = render("deploy/kubernetes/base")
  const wired = new Set<string>([
    ...Object.keys(named(objects, "ConfigMap", "switchboard-config").data!),
    ...byKind(objects, "Deployment").flatMap((d) =>
      podTemplate(d).spec.containers.flatMap((c) => (c.env ?? []).map((e) => e.name))
    )
  ])
  const reads = settingsTheCodeReads()

  it("finds the settings the code reads", () => {
    assert.isAbove(reads.size, 40)
    for (
      const name of ["DATABASE_URL", "JWT_SECRET", "HTTP_PORT", "LOG_FORMAT", "QR_BAILEYS_LOG_LEVEL", "RATE_LIMIT_"]
    ) {
      assert.isTrue(reads.has(name), name)
    }
  })

  it("every setting the code reads is in the Kubernetes wiring or documented (with its default) in docs/CONFIGURATION.md", () => {
    const docs = documented()
    const family = (name: string) => docs.some((d) => d.endsWith("<RULE>") && name.startsWith(d.replace(/<.*$/, "")))
    const missing = [...reads].filter((name) =>
      !wired.has(name) && !docs.includes(name) && !family(name) &&
      // the test harness's own database (packages/db/src/testing is left out; these are in Database.ts' seeds)
      !name.startsWith("TEST_")
    )
    assert.deepStrictEqual(missing, [], "add each to deploy/kubernetes/base or to docs/CONFIGURATION.md")
  })

  it("wires what production needs, and only names the code reads", () => {
    for (
      const name of [
        "NODE_ENV",
        "DATABASE_URL",
        "REDIS_URL",
        "JWT_SECRET",
        "API_KEY_PEPPER",
        "SECRETS_ENCRYPTION_KEY",
        "PUBLIC_URL",
        "HOST",
        "PORT",
        "METRICS_PORT",
        "METRICS_HOST"
      ]
    ) {
      assert.isTrue(wired.has(name), name)
    }
    // the cluster's own names (HOST, PORT) come from @effect/cluster's ShardingConfig; POD_IP is the downward API's
    const cluster = new Set(["HOST", "PORT", "POD_IP"])
    for (const name of wired) {
      assert.isTrue(reads.has(name) || cluster.has(name) || name.startsWith("OTEL_"), `${name} is read by the code`)
    }
  })
})
