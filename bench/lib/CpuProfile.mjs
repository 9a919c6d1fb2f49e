#!/usr/bin/env node
/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): the top functions by self time and by
 * inclusive time (a function counted once per sample however deep it recurses), and the top
 * files and packages by self time.
 *
 * node bench/lib/CpuProfile.mjs PROFILE.cpuprofile [--top 25] [--filter TEXT]
 */
import { readFileSync } from "node:fs"

const args = process.argv.slice(2)
const file = args.find((a) => !a.startsWith("--") && args[args.indexOf(a) - 1] !== "--top" &&
  args[args.indexOf(a) - 1] !== "--filter")
if (!file) {
  console.error("usage: node bench/lib/CpuProfile.mjs PROFILE.cpuprofile [--top 25] [--filter TEXT]")
  process.exit(2)
}
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? fallback : args[i + 1]
}
const top = Number(option("top", 25))
const filter = option("filter", undefined)

const profile = JSON.parse(readFileSync(file, "utf8"))
const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

const shortUrl = (url) => {
  if (!url) return ""
  const clean = url.replace(/^file:\/\//, "")
  const nm = clean.lastIndexOf("node_modules/")
  if (nm !== -1) return clean.slice(nm + "node_modules/".length)
  const m = /\/(packages|services|bench|test)\/.*$/.exec(clean)
  return m ? m[0].slice(1) : clean
}
const packageOf = (url) => {
  const short = shortUrl(url)
  if (!short) return "(native/vm)"
  if (url.includes("node_modules/")) {
    const parts = short.split("/")
    return parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]
  }
  if (url.startsWith("node:")) return "node:*"
  const parts = short.split("/")
  return parts.length > 1 ? `${parts[0]}/${parts[1]}` : short
}
const keyOf = (node) => {
  const f = node.callFrame
  return `${f.functionName || "(anonymous)"}  ${shortUrl(f.url)}:${f.lineNumber + 1}`
}

// time per sample: timeDeltas[i] is the time before sample i
const selfByNode = new Map()
let total = 0
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas?.[i] ?? 0
  total += dt
  selfByNode.set(id, (selfByNode.get(id) ?? 0) + dt)
})

const selfByFunction = new Map()
const selfByFile = new Map()
const selfByPackage = new Map()
const inclusive = new Map()
for (const [id, dt] of selfByNode) {
  const node = nodes.get(id)
  const key = keyOf(node)
  selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + dt)
  const fileKey = shortUrl(node.callFrame.url) || `(${node.callFrame.functionName})`
  selfByFile.set(fileKey, (selfByFile.get(fileKey) ?? 0) + dt)
  const pkg = packageOf(node.callFrame.url)
  selfByPackage.set(pkg, (selfByPackage.get(pkg) ?? 0) + dt)
  const seen = new Set()
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const k = keyOf(nodes.get(cur))
    if (seen.has(k)) continue
    seen.add(k)
    inclusive.set(k, (inclusive.get(k) ?? 0) + dt)
  }
}

const print = (title, map) => {
  console.log(`\n## ${title}`)
  const rows = [...map].filter(([k]) => !filter || k.includes(filter)).sort((a, b) => b[1] - a[1]).slice(0, top)
  for (const [k, v] of rows) {
    console.log(`${(v / 1000).toFixed(0).padStart(8)} ms ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`)
  }
}

console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled, ${profile.samples.length} samples`)
print("self time by function", selfByFunction)
print("self time by file", selfByFile)
print("self time by package", selfByPackage)
print("inclusive time by function", inclusive)
