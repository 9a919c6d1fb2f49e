/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for tests of `GET /metrics`.
 * It throws on what Prometheus would refuse or misread: a sample before its family's `# TYPE`,
 * a family split in two, a duplicate `# TYPE`/`# HELP` or series, a bad metric or label name, an
 * unescaped label value, a counter whose name does not end in `_total` or that is negative, a
 * histogram whose buckets are not cumulative, lack `+Inf` or disagree with `_count`, a `quantile`
 * label outside a summary or an `le` outside a histogram (labels Prometheus reserves).
 */

export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped"

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Family {
  readonly name: string
  readonly type: MetricType
  readonly help: string | undefined
  readonly samples: ReadonlyArray<Sample>
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"])

const parseValue = (raw: string, line: number): number => {
  if (raw === "+Inf") return Number.POSITIVE_INFINITY
  if (raw === "-Inf") return Number.NEGATIVE_INFINITY
  if (raw === "NaN") return Number.NaN
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`line ${line}: bad value ${raw}`)
  return Number(raw)
}

/** `{a="x",b="y"}` from `text` at `start` (the `{`): the labels and the index after `}`. */
const parseLabels = (text: string, start: number, line: number) => {
  const labels: Record<string, string> = {}
  let i = start + 1
  while (true) {
    if (text[i] === "}") return { labels, end: i + 1 }
    const eq = text.indexOf("=", i)
    if (eq < 0) throw new Error(`line ${line}: label without '='`)
    const name = text.slice(i, eq)
    if (!LABEL_NAME.test(name)) throw new Error(`line ${line}: bad label name ${JSON.stringify(name)}`)
    if (name in labels) throw new Error(`line ${line}: label ${name} twice`)
    if (text[eq + 1] !== "\"") throw new Error(`line ${line}: label ${name} value not quoted`)
    let value = ""
    let j = eq + 2
    for (;; j++) {
      const c = text[j]
      if (c === undefined) throw new Error(`line ${line}: unterminated label value`)
      if (c === "\"") break
      if (c === "\n") throw new Error(`line ${line}: raw line feed in a label value`)
      if (c === "\\") {
        const next = text[++j]
        if (next === "\\") value += "\\"
        else if (next === "\"") value += "\""
        else if (next === "n") value += "\n"
        else throw new Error(`line ${line}: bad escape \\${next} in a label value`)
      } else {
        value += c
      }
    }
    labels[name] = value
    i = j + 1
    if (text[i] === ",") i++
    else if (text[i] !== "}") throw new Error(`line ${line}: expected ',' or '}' after label ${name}`)
  }
}

/** The family a sample name belongs to, given the families declared so far. */
const familyOf = (sampleName: string, families: Map<string, { type: MetricType }>) => {
  if (families.has(sampleName)) return sampleName
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (!sampleName.endsWith(suffix)) continue
    const base = sampleName.slice(0, -suffix.length)
    const type = families.get(base)?.type
    if (type === "histogram" || (type === "summary" && suffix !== "_bucket")) return base
  }
  return undefined
}

const seriesKey = (name: string, labels: Record<string, string>, drop?: string) =>
  `${name}{${
    Object.keys(labels).filter((k) => k !== drop).sort().map((k) => `${k}=${JSON.stringify(labels[k])}`).join(",")
  }}`

const checkHistogram = (family: Family) => {
  const groups = new Map<string, { buckets: Array<[number, number]>; count?: number; sum?: number }>()
  for (const s of family.samples) {
    const key = seriesKey(family.name, s.labels, "le")
    const group = groups.get(key) ?? { buckets: [] }
    groups.set(key, group)
    if (s.name.endsWith("_bucket")) {
      const le = s.labels["le"]
      if (le === undefined) throw new Error(`${family.name}: a bucket without le`)
      group.buckets.push([parseValue(le, 0), s.value])
    } else if (s.name.endsWith("_count")) group.count = s.value
    else if (s.name.endsWith("_sum")) group.sum = s.value
    else throw new Error(`${family.name}: sample ${s.name} in a histogram`)
  }
  for (const [key, group] of groups) {
    if (group.count === undefined || group.sum === undefined) throw new Error(`${key}: _count or _sum missing`)
    for (let i = 1; i < group.buckets.length; i++) {
      if (!(group.buckets[i]![0] > group.buckets[i - 1]![0])) throw new Error(`${key}: le not ascending`)
      if (group.buckets[i]![1] < group.buckets[i - 1]![1]) throw new Error(`${key}: buckets not cumulative`)
    }
    const last = group.buckets[group.buckets.length - 1]
    if (last === undefined || last[0] !== Number.POSITIVE_INFINITY) throw new Error(`${key}: no +Inf bucket`)
    if (last[1] !== group.count) throw new Error(`${key}: +Inf bucket ${last[1]} but _count ${group.count}`)
  }
}

/** Parses an exposition; every family by name. Throws on anything malformed. */
export const parse = (text: string): ReadonlyMap<string, Family> => {
  if (text !== "" && !text.endsWith("\n")) throw new Error("the exposition does not end with a line feed")
  const families = new Map<
    string,
    { name: string; type: MetricType; help: string | undefined; samples: Array<Sample> }
  >()
  const finished = new Set<string>()
  const series = new Set<string>()
  let current: string | undefined
  const enter = (name: string, line: number) => {
    if (current === name) return
    if (finished.has(name)) throw new Error(`line ${line}: family ${name} split in two groups`)
    if (current !== undefined) finished.add(current)
    current = name
  }
  const lines = text.split("\n")
  lines.forEach((raw, index) => {
    const n = index + 1
    if (raw.trim() === "") return
    if (raw.startsWith("#")) {
      const match = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(raw)
      if (match === null) return // a plain comment
      const [, kind, name, rest = ""] = match
      if (!METRIC_NAME.test(name!)) throw new Error(`line ${n}: bad metric name ${name}`)
      const family = families.get(name!)
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) throw new Error(`line ${n}: unknown type ${rest}`)
        if (family?.samples.length) throw new Error(`line ${n}: TYPE of ${name} after its samples`)
        if (family?.type !== undefined && family.type !== "untyped") throw new Error(`line ${n}: TYPE of ${name} twice`)
        enter(name!, n)
        families.set(name!, {
          name: name!,
          type: rest as MetricType,
          help: family?.help,
          samples: family?.samples ?? []
        })
      } else {
        if (family?.help !== undefined) throw new Error(`line ${n}: HELP of ${name} twice`)
        enter(name!, n)
        families.set(name!, {
          name: name!,
          type: family?.type ?? "untyped",
          help: rest.replace(/\\n/g, "\n").replace(/\\\\/g, "\\"),
          samples: family?.samples ?? []
        })
      }
      return
    }
    const nameEnd = raw.search(/[{ ]/)
    if (nameEnd <= 0) throw new Error(`line ${n}: not a sample: ${raw}`)
    const name = raw.slice(0, nameEnd)
    if (!METRIC_NAME.test(name)) throw new Error(`line ${n}: bad metric name ${name}`)
    let labels: Record<string, string> = {}
    let rest = raw.slice(nameEnd)
    if (rest.startsWith("{")) {
      const parsed = parseLabels(raw, nameEnd, n)
      labels = parsed.labels
      rest = raw.slice(parsed.end)
    }
    const fields = rest.trim().split(/\s+/)
    if (!rest.startsWith(" ") || fields.length < 1 || fields.length > 2) throw new Error(`line ${n}: bad sample ${raw}`)
    const value = parseValue(fields[0]!, n)
    const familyName = familyOf(name, families)
    if (familyName === undefined) throw new Error(`line ${n}: sample ${name} before its # TYPE`)
    enter(familyName, n)
    const family = families.get(familyName)!
    if (family.type === "untyped") throw new Error(`line ${n}: sample ${name} before its # TYPE`)
    const key = seriesKey(name, labels)
    if (series.has(key)) throw new Error(`line ${n}: series ${key} twice`)
    series.add(key)
    if (family.type === "counter") {
      if (!name.endsWith("_total")) throw new Error(`line ${n}: counter ${name} does not end in _total`)
      if (!(value >= 0)) throw new Error(`line ${n}: counter ${name} is ${value}`)
    }
    // the labels Prometheus reserves for its own types (promtool: "reserved label"): a `quantile`
    // outside a summary or an `le` outside a histogram is read as if it were one
    if ("quantile" in labels && family.type !== "summary") {
      throw new Error(`line ${n}: ${family.type} ${name} has the label quantile, reserved for summaries`)
    }
    if ("le" in labels && family.type !== "histogram") {
      throw new Error(`line ${n}: ${family.type} ${name} has the label le, reserved for histograms`)
    }
    if ((family.type === "counter" || family.type === "gauge") && name !== familyName) {
      throw new Error(`line ${n}: ${name} in family ${familyName}`)
    }
    family.samples.push({ name, labels, value })
  })
  for (const family of families.values()) {
    if (family.type === "untyped" && family.samples.length === 0) throw new Error(`${family.name}: HELP without TYPE`)
    if (family.type === "histogram") checkHistogram(family)
  }
  return families
}

/** The samples named `name` whose labels include `match`. */
export const samples = (
  families: ReadonlyMap<string, Family>,
  name: string,
  match: Readonly<Record<string, string>> = {}
): ReadonlyArray<Sample> =>
  [...families.values()].flatMap((f) =>
    f.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
  )

/** The sum of the samples named `name` whose labels include `match` (0 when none). */
export const total = (
  families: ReadonlyMap<string, Family>,
  name: string,
  match: Readonly<Record<string, string>> = {}
): number => samples(families, name, match).reduce((sum, s) => sum + s.value, 0)
