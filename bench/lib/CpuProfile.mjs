/**
 * Summarises a V8 `.cpuprofile` (node --cpu-prof): the top functions by self time and by
 * inclusive time (a function's samples plus its callees', each sample counted once per
 * function even under recursion), and self time per package / file.
 *
 *   node bench/lib/CpuProfile.mjs FILE.cpuprofile [--top 25]
 */
import { readFileSync } from "node:fs"

const [file] = process.argv.slice(2).filter((a) => !a.startsWith("--"))
const topIndex = process.argv.indexOf("--top")
const top = topIndex > 0 ? Number(process.argv[topIndex + 1]) : 25
if (!file) {
  console.error("usage: node bench/lib/CpuProfile.mjs FILE.cpuprofile [--top N]")
  process.exit(2)
}

const profile = JSON.parse(readFileSync(file, "utf8"))
const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

// time of each sample: the delta to the next one
const selfUs = new Map()
const samples = profile.samples
const deltas = profile.timeDeltas
let total = 0
for (let i = 0; i < samples.length; i++) {
  const dt = deltas[i + 1] ?? 0
  selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + dt)
  total += dt
}

/** where a node's code lives: a package (node_modules/<pkg>), a workspace file, or node itself */
const place = (url) => {
  if (!url) return "(native)"
  const nm = url.lastIndexOf("node_modules/")
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/")
    return rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]
  }
  if (url.startsWith("node:")) return url
  const m = /\/(packages|services|bench|test)\/(.*)$/.exec(url)
  return m ? `${m[1]}/${m[2]}` : url
}

const label = (n) => {
  const f = n.callFrame
  const name = f.functionName || "(anonymous)"
  return f.url ? `${name} ${place(f.url)}:${f.lineNumber + 1}` : name
}

const bySelf = new Map()
const byInclusive = new Map()
const byPlace = new Map()
for (const [id, us] of selfUs) {
  const n = nodes.get(id)
  const key = label(n)
  bySelf.set(key, (bySelf.get(key) ?? 0) + us)
  byPlace.set(place(n.callFrame.url), (byPlace.get(place(n.callFrame.url)) ?? 0) + us)
  const seen = new Set()
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const k = label(nodes.get(cur))
    if (seen.has(k)) continue
    seen.add(k)
    byInclusive.set(k, (byInclusive.get(k) ?? 0) + us)
  }
}

const print = (title, map) => {
  console.log(`\n${title}`)
  const rows = [...map].sort((a, b) => b[1] - a[1]).slice(0, top)
  for (const [key, us] of rows) {
    console.log(`${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${key}`)
  }
}

console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`)
print("self time by function", bySelf)
print("self time by package / file", byPlace)
print("inclusive time by function", byInclusive)
