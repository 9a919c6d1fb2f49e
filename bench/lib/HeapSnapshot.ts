/**
 * What a V8 heap snapshot (`Inspector.takeHeapSnapshot`) holds, by kind of object: for each
 * constructor (plain objects by their first property names, closures by function name and the
 * script line that made them) the count, the self size and the retained size (the size of what
 * only it keeps alive, from the dominator tree; an object inside another of its own kind counts
 * once), as Chrome DevTools' "Summary" view shows it. `diff` compares two snapshots taken with a
 * different number of live entities: the growth per entity, kind by kind.
 *
 *   node --import tsx bench/lib/HeapSnapshot.ts FILE_A FILE_B ENTITIES_A ENTITIES_B [TOP]
 *
 * Parsed without `JSON.parse` of the whole file (a snapshot of a large heap is longer than the
 * longest string V8 makes): the numbers of `nodes`, `edges` and `locations` are read straight
 * from the bytes.
 */
import { readFileSync } from "node:fs"
import type { Script } from "./Inspector.js"

interface Meta {
  readonly node_fields: Array<string>
  readonly node_types: [Array<string>, ...Array<unknown>]
  readonly edge_fields: Array<string>
  readonly edge_types: [Array<string>, ...Array<unknown>]
  readonly location_fields?: Array<string>
}

export interface Snapshot {
  readonly meta: Meta
  readonly nodes: Float64Array
  readonly edges: Float64Array
  readonly locations: Float64Array
  readonly strings: Array<string>
}

const numbersAfter = (bytes: Buffer, key: string): Float64Array => {
  const start = bytes.indexOf(`"${key}":[`)
  if (start < 0) return new Float64Array(0)
  let i = start + key.length + 4
  const out: Array<number> = []
  let n = 0
  let inNumber = false
  for (; i < bytes.length; i++) {
    const c = bytes[i]!
    if (c >= 48 && c <= 57) {
      n = n * 10 + (c - 48)
      inNumber = true
    } else {
      if (inNumber) out.push(n)
      n = 0
      inNumber = false
      if (c === 93) break // ]
    }
  }
  return Float64Array.from(out)
}

export const readSnapshot = (path: string): Snapshot => {
  const bytes = readFileSync(path)
  const metaEnd = bytes.indexOf(`"nodes":[`)
  const head = bytes.subarray(0, metaEnd).toString("utf8").replace(/,\s*$/, "") + "}"
  const meta = (JSON.parse(head) as { snapshot: { meta: Meta } }).snapshot.meta
  const stringsAt = bytes.lastIndexOf(`"strings":[`)
  const stringsText = bytes.subarray(stringsAt + `"strings":`.length).toString("utf8").replace(/}\s*$/, "")
  return {
    meta,
    nodes: numbersAfter(bytes, "nodes"),
    edges: numbersAfter(bytes, "edges"),
    locations: numbersAfter(bytes, "locations"),
    strings: JSON.parse(stringsText) as Array<string>
  }
}

export interface Kind {
  count: number
  self: number
  retained: number
}

/**
 * Per kind of object: count, self and retained bytes. `scripts` names the script ids of closures'
 * locations (from the inspector's `Debugger.scriptParsed`); without it a location is the script id.
 */
export const summarize = (snap: Snapshot, scripts: ReadonlyMap<string, Script> = new Map()) => {
  const { edges, meta, nodes, strings } = snap
  const nf = meta.node_fields.length
  const ef = meta.edge_fields.length
  const nType = meta.node_fields.indexOf("type")
  const nName = meta.node_fields.indexOf("name")
  const nSelf = meta.node_fields.indexOf("self_size")
  const nEdges = meta.node_fields.indexOf("edge_count")
  const eType = meta.edge_fields.indexOf("type")
  const eName = meta.edge_fields.indexOf("name_or_index")
  const eTo = meta.edge_fields.indexOf("to_node")
  const nodeTypes = meta.node_types[0]
  const edgeTypes = meta.edge_types[0]
  const weak = edgeTypes.indexOf("weak")
  const shortcut = edgeTypes.indexOf("shortcut")
  const propertyEdge = edgeTypes.indexOf("property")
  const count = nodes.length / nf

  const firstEdge = new Uint32Array(count + 1)
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e
    e += nodes[i * nf + nEdges]! * ef
  }
  firstEdge[count] = edges.length

  // where closures were made: node index -> "url:line"
  const where = new Map<number, string>()
  const lf = meta.location_fields?.length ?? 4
  for (let i = 0; i + lf <= snap.locations.length; i += lf) {
    const node = snap.locations[i]! / nf
    const script = scripts.get(String(snap.locations[i + 1]))
    const url = (script?.url ?? `script ${snap.locations[i + 1]}`).replace(
      /^.*\/(node_modules|packages|services)\//,
      "$1/"
    )
    const [line, column] = [snap.locations[i + 2]!, snap.locations[i + 3]!]
    // the workspace's code is compiled by tsx, its line numbers are not the file's: the closure's text tells it
    const text = script?.source === undefined
      ? ""
      : " «" + script.source.split("\n")[line]!.slice(column, column + 70).replace(/\s+/g, " ") + "»"
    where.set(node, `${url}:${line + 1}${text}`)
  }

  const kindOf = (i: number): string => {
    const type = nodeTypes[nodes[i * nf + nType]!]!
    const name = strings[nodes[i * nf + nName]!]!
    if (type === "closure") return `closure ${name || "(anonymous)"} ${where.get(i) ?? ""}`.trim()
    if (type === "object" && name === "Object") {
      const props: Array<string> = []
      for (let e = firstEdge[i]!; e < firstEdge[i + 1]! && props.length < 5; e += ef) {
        if (edges[e + eType] === propertyEdge) {
          const prop = strings[edges[e + eName]!]!
          if (prop !== "__proto__" && prop !== "map") props.push(prop)
        }
      }
      return `{${props.join(", ")}}`
    }
    if (type === "object") return name
    if (type === "string" || type === "concatenated string" || type === "sliced string") return `(${type})`
    if (type === "number" || type === "heap number") return "(number)"
    return `(${type}) ${name.length > 60 ? name.slice(0, 60) + "…" : name}`
  }

  // dominators (Cooper, Harvey, Kennedy) over the graph without weak edges, from node 0 (the root)
  const order = new Uint32Array(count) // post-order number -> node
  const post = new Int32Array(count).fill(-1) // node -> post-order number
  {
    const stack = new Uint32Array(count)
    const next = new Uint32Array(count)
    const seen = new Uint8Array(count)
    let top = 0
    let n = 0
    stack[0] = 0
    seen[0] = 1
    next[0] = firstEdge[0]!
    while (top >= 0) {
      const node = stack[top]!
      let pushed = false
      while (next[node]! < firstEdge[node + 1]!) {
        const e = next[node]!
        next[node] = e + ef
        const t = edges[e + eType]!
        if (t === weak || t === shortcut) continue
        const to = edges[e + eTo]! / nf
        if (seen[to]) continue
        seen[to] = 1
        next[to] = firstEdge[to]!
        stack[++top] = to
        pushed = true
        break
      }
      if (!pushed) {
        post[node] = n
        order[n++] = node
        top--
      }
    }
    // unreachable nodes (not counted by DevTools either) keep post = -1
  }
  // predecessors
  const predCount = new Uint32Array(count + 1)
  for (let i = 0; i < count; i++) {
    if (post[i]! < 0) continue
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += ef) {
      const t = edges[e + eType]!
      if (t === weak || t === shortcut) continue
      predCount[edges[e + eTo]! / nf]!++
    }
  }
  const predStart = new Uint32Array(count + 1)
  for (let i = 0; i < count; i++) predStart[i + 1] = predStart[i]! + predCount[i]!
  const preds = new Uint32Array(predStart[count]!)
  const fill = predStart.slice(0, count)
  for (let i = 0; i < count; i++) {
    if (post[i]! < 0) continue
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += ef) {
      const t = edges[e + eType]!
      if (t === weak || t === shortcut) continue
      const to = edges[e + eTo]! / nf
      preds[fill[to]!++] = i
    }
  }
  const idom = new Int32Array(count).fill(-1)
  idom[0] = 0
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (post[a]! < post[b]!) a = idom[a]!
      while (post[b]! < post[a]!) b = idom[b]!
    }
    return a
  }
  for (let changed = true; changed;) {
    changed = false
    for (let k = count - 1; k >= 0; k--) {
      const node = order[k]
      if (node === undefined || node === 0 || post[node]! < 0) continue
      let d = -1
      for (let p = predStart[node]!; p < predStart[node + 1]!; p++) {
        const pred = preds[p]!
        if (idom[pred] === -1) continue
        d = d === -1 ? pred : intersect(pred, d)
      }
      if (d !== -1 && idom[node] !== d) {
        idom[node] = d
        changed = true
      }
    }
  }
  // retained = self + what it dominates (children come before parents in post order)
  const retained = new Float64Array(count)
  for (let i = 0; i < count; i++) retained[i] = post[i]! < 0 ? 0 : nodes[i * nf + nSelf]!
  for (let k = 0; k < count; k++) {
    const node = order[k]!
    if (node === 0 || post[node]! < 0) continue
    retained[idom[node]!]! += retained[node]!
  }

  // arrays and V8's internals by the kind of what holds them (the nearest dominator of another type)
  const internal = new Set(["array", "hidden", "code", "object shape"])
  const ownKind = (i: number): string => {
    const kind = kindOf(i)
    if (!internal.has(nodeTypes[nodes[i * nf + nType]!]!)) return kind
    let owner = idom[i]!
    for (let hops = 0; owner > 0 && internal.has(nodeTypes[nodes[owner * nf + nType]!]!) && hops < 10; hops++) {
      owner = idom[owner]!
    }
    return owner > 0 ? `${kind} of ${kindOf(owner)}` : kind
  }

  // kinds; an object's retained size counts toward its kind unless an ancestor in the dominator tree is of the same kind
  const kindIds = new Map<string, number>()
  const kindOfNode = new Int32Array(count)
  const kinds: Array<{ name: string } & Kind> = []
  for (let i = 0; i < count; i++) {
    const name = post[i]! < 0 ? kindOf(i) : ownKind(i)
    let id = kindIds.get(name)
    if (id === undefined) {
      id = kinds.length
      kindIds.set(name, id)
      kinds.push({ name, count: 0, self: 0, retained: 0 })
    }
    kindOfNode[i] = id
    if (post[i]! >= 0) {
      kinds[id]!.count++
      kinds[id]!.self += nodes[i * nf + nSelf]!
    }
  }
  // children lists of the dominator tree, then a walk with the kinds on the path
  const childCount = new Uint32Array(count + 1)
  for (let i = 1; i < count; i++) if (post[i]! >= 0) childCount[idom[i]!]!++
  const childStart = new Uint32Array(count + 1)
  for (let i = 0; i < count; i++) childStart[i + 1] = childStart[i]! + childCount[i]!
  const children = new Uint32Array(childStart[count]!)
  const cfill = childStart.slice(0, count)
  for (let i = 1; i < count; i++) if (post[i]! >= 0) children[cfill[idom[i]!]!++] = i
  const onPath = new Uint32Array(kinds.length)
  const stack = new Uint32Array(count)
  const nextChild = new Uint32Array(count)
  let top = 0
  stack[0] = 0
  nextChild[0] = childStart[0]!
  onPath[kindOfNode[0]!]!++
  kinds[kindOfNode[0]!]!.retained += retained[0]!
  while (top >= 0) {
    const node = stack[top]!
    if (nextChild[node]! < childStart[node + 1]!) {
      const child = children[nextChild[node]!++]!
      const k = kindOfNode[child]!
      if (onPath[k] === 0) kinds[k]!.retained += retained[child]!
      onPath[k]!++
      nextChild[child] = childStart[child]!
      stack[++top] = child
    } else {
      onPath[kindOfNode[node]!]!--
      top--
    }
  }
  return new Map(kinds.map(({ name, ...kind }) => [name, kind]))
}

/** Growth per entity from `a` (`entitiesA` live) to `b` (`entitiesB` live), kind by kind. */
export const diff = (
  a: ReadonlyMap<string, Kind>,
  b: ReadonlyMap<string, Kind>,
  entitiesA: number,
  entitiesB: number
) => {
  const per = entitiesB - entitiesA
  const names = new Set([...a.keys(), ...b.keys()])
  return [...names].map((name) => {
    const x = a.get(name) ?? { count: 0, self: 0, retained: 0 }
    const y = b.get(name) ?? { count: 0, self: 0, retained: 0 }
    return {
      name,
      count: (y.count - x.count) / per,
      self: (y.self - x.self) / per,
      retained: (y.retained - x.retained) / per
    }
  })
}

const table = (rows: ReturnType<typeof diff>, by: "self" | "retained", top: number) =>
  rows.sort((p, q) => q[by] - p[by]).slice(0, top).map((r) =>
    `${r[by].toFixed(0).padStart(7)} B  ${(by === "self" ? r.retained : r.self).toFixed(0).padStart(7)} B  ${
      r.count.toFixed(2).padStart(6)
    }  ${r.name}`
  ).join("\n")

export const report = (rows: ReturnType<typeof diff>, top = 40) => {
  const total = rows.reduce((s, r) => s + r.self, 0)
  return [
    `per entity: ${(total / 1024).toFixed(2)} KiB of self size in all`,
    `by self size (self, retained, objects per entity, kind):`,
    table(rows, "self", top),
    `by retained size (retained, self, objects per entity, kind):`,
    table(rows, "retained", top)
  ].join("\n")
}

if (process.argv[1]?.endsWith("HeapSnapshot.ts")) {
  const [fileA, fileB, nA, nB, top] = process.argv.slice(2)
  const scriptsOf = (file: string) => {
    try {
      return new Map(Object.entries(JSON.parse(readFileSync(`${file}.scripts.json`, "utf8")) as Record<string, Script>))
    } catch {
      return new Map<string, Script>()
    }
  }
  const a = summarize(readSnapshot(fileA!), scriptsOf(fileA!))
  const b = summarize(readSnapshot(fileB!), scriptsOf(fileB!))
  console.log(report(diff(a, b, Number(nA), Number(nB)), Number(top ?? 40)))
}
