/**
 * Effect's metric registry in the Prometheus text exposition format (version 0.0.4), what
 * `GET /metrics` answers (docs/OPERATING.md "Metrics"). Code records metrics the Effect way
 * (`Metric.counter`, `Metric.gauge`, `Metric.histogram`, ...); this only renders a snapshot:
 *
 * - a counter made with `incremental: true` is a `counter` (its name ends in `_total`); any
 *   other counter can go down, so it is a `gauge`;
 * - a gauge is a `gauge`; a histogram is `_bucket` lines with cumulative `le` buckets ending in
 *   `+Inf`, then `_sum` and `_count`; a summary is `quantile` lines, `_sum` and `_count`; a
 *   frequency is a counter with one series per word (label `value`);
 * - one `# HELP` (the metric's description) and one `# TYPE` line per metric name, before its
 *   samples; label values and help text escaped as the format asks;
 * - each series once: registry keys that render alike are merged (`merged`).
 */
import type { MetricPair } from "effect"
import { MetricKeyType, MetricState, Option } from "effect"

type Kind = "counter" | "gauge" | "histogram" | "summary"

interface Family {
  readonly name: string
  readonly kind: Kind
  help: string | undefined
  /** per label set (rendered), the pairs that make that series */
  readonly series: Map<string, Array<MetricPair.MetricPair.Untyped>>
}

/**
 * One state for pairs that render as the same series (the registry can hold two keys that differ
 * only in what the format does not show, such as the description, and a series twice is an
 * invalid exposition that Prometheus refuses): counts and histogram buckets added, a gauge's
 * last value, a summary's first.
 */
const merged = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): unknown => {
  const states: ReadonlyArray<unknown> = pairs.map((p) => p.metricState)
  const [first] = states
  if (states.length === 1) return first
  if (states.every(MetricState.isCounterState)) {
    const count = states.reduce<number | bigint>(
      (sum, s) =>
        typeof sum === "bigint" || typeof s.count === "bigint"
          ? BigInt(sum) + BigInt(s.count)
          : sum + s.count,
      0
    )
    return MetricState.counter(count as number)
  }
  if (states.every(MetricState.isHistogramState)) {
    const counts = new Map<number, number>()
    for (const s of states) for (const [boundary, n] of s.buckets) counts.set(boundary, (counts.get(boundary) ?? 0) + n)
    return MetricState.histogram({
      buckets: [...counts].sort(([a], [b]) => a - b),
      count: states.reduce((n, s) => n + s.count, 0),
      min: Math.min(...states.map((s) => s.min)),
      max: Math.max(...states.map((s) => s.max)),
      sum: states.reduce((n, s) => n + s.sum, 0)
    })
  }
  if (states.every(MetricState.isFrequencyState)) {
    const occurrences = new Map<string, number>()
    for (const s of states) {
      for (const [word, n] of s.occurrences) occurrences.set(word, (occurrences.get(word) ?? 0) + n)
    }
    return MetricState.frequency(occurrences)
  }
  return MetricState.isGaugeState(first) ? states[states.length - 1] : first
}

/** A metric name as the format allows it: `[a-zA-Z_:][a-zA-Z0-9_:]*`. */
export const metricName = (raw: string) => {
  const cleaned = raw.replace(/[^a-zA-Z0-9_:]/g, "_")
  return /^[a-zA-Z_:]/.test(cleaned) ? cleaned : `_${cleaned}`
}

/** A label name as the format allows it: `[a-zA-Z_][a-zA-Z0-9_]*`. */
export const labelName = (raw: string) => {
  const cleaned = raw.replace(/[^a-zA-Z0-9_]/g, "_")
  return /^[a-zA-Z_]/.test(cleaned) ? cleaned : `_${cleaned}`
}

/** A label value: backslash, double quote and line feed escaped. */
export const escapeLabelValue = (value: string) =>
  value.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

/** Help text: backslash and line feed escaped. */
export const escapeHelp = (text: string) => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

/** A sample value: integers as integers, `+Inf`, `-Inf` and `NaN` spelled as the format does. */
export const formatValue = (value: number | bigint): string => {
  if (typeof value === "bigint") return value.toString()
  if (Number.isNaN(value)) return "NaN"
  if (value === Number.POSITIVE_INFINITY) return "+Inf"
  if (value === Number.NEGATIVE_INFINITY) return "-Inf"
  return String(value)
}

const labels = (pairs: ReadonlyArray<readonly [string, string]>) =>
  pairs.length === 0
    ? ""
    : `{${pairs.map(([k, v]) => `${labelName(k)}="${escapeLabelValue(v)}"`).join(",")}}`

const sample = (name: string, pairs: ReadonlyArray<readonly [string, string]>, value: number | bigint) =>
  `${name}${labels(pairs)} ${formatValue(value)}`

const kindOf = (pair: MetricPair.MetricPair.Untyped): Kind | undefined => {
  const keyType: unknown = pair.metricKey.keyType
  if (MetricKeyType.isCounterKey(keyType)) return keyType.incremental ? "counter" : "gauge"
  if (MetricKeyType.isGaugeKey(keyType)) return "gauge"
  if (MetricKeyType.isHistogramKey(keyType)) return "histogram"
  if (MetricKeyType.isSummaryKey(keyType)) return "summary"
  if (MetricKeyType.isFrequencyKey(keyType)) return "counter"
  return undefined
}

/** The exposed name: a counter's ends in `_total`. */
const exposedName = (raw: string, kind: Kind) => {
  const name = metricName(raw)
  return kind === "counter" && !name.endsWith("_total") ? `${name}_total` : name
}

/** The samples of one metric (one set of tags). */
const samplesOf = (
  name: string,
  tags: ReadonlyArray<readonly [string, string]>,
  state: unknown
): Array<string> => {
  if (MetricState.isCounterState(state)) return [sample(name, tags, state.count)]
  if (MetricState.isGaugeState(state)) return [sample(name, tags, state.value)]
  if (MetricState.isHistogramState(state)) {
    // Effect's buckets are cumulative already; its boundaries end with +Inf, which is the count
    const lines = state.buckets
      .filter(([boundary]) => Number.isFinite(boundary))
      .map(([boundary, count]) => sample(`${name}_bucket`, [...tags, ["le", formatValue(boundary)]], count))
    lines.push(sample(`${name}_bucket`, [...tags, ["le", "+Inf"]], state.count))
    lines.push(sample(`${name}_sum`, tags, state.sum))
    lines.push(sample(`${name}_count`, tags, state.count))
    return lines
  }
  if (MetricState.isSummaryState(state)) {
    const lines = state.quantiles.flatMap(([quantile, value]) =>
      Option.isSome(value) ? [sample(name, [...tags, ["quantile", formatValue(quantile)]], value.value)] : []
    )
    lines.push(sample(`${name}_sum`, tags, state.sum))
    lines.push(sample(`${name}_count`, tags, state.count))
    return lines
  }
  if (MetricState.isFrequencyState(state)) {
    return Array.from(state.occurrences, ([word, count]) => sample(name, [...tags, ["value", word]], count))
  }
  return []
}

/**
 * Renders `pairs` (from `Metric.snapshot`). Families come out sorted by name, series in the order
 * of the registry; a name registered with two different types keeps the first seen.
 */
export const render = (pairs: Iterable<MetricPair.MetricPair.Untyped>): string => {
  const families = new Map<string, Family>()
  for (const pair of pairs) {
    const kind = kindOf(pair)
    if (kind === undefined) continue
    const name = exposedName(pair.metricKey.name, kind)
    let family = families.get(name)
    if (family === undefined) {
      family = { name, kind, help: undefined, series: new Map() }
      families.set(name, family)
    } else if (family.kind !== kind) {
      continue
    }
    if (family.help === undefined && Option.isSome(pair.metricKey.description)) {
      family.help = pair.metricKey.description.value
    }
    const series = labels(pair.metricKey.tags.map((t) => [t.key, t.value] as const))
    const same = family.series.get(series)
    if (same === undefined) family.series.set(series, [pair])
    else same.push(pair)
  }
  const out: Array<string> = []
  for (const family of [...families.values()].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) {
    const lines = [...family.series.values()].flatMap((pairs) =>
      samplesOf(family.name, pairs[0]!.metricKey.tags.map((t) => [t.key, t.value] as const), merged(pairs))
    )
    if (lines.length === 0) continue
    out.push(`# HELP ${family.name} ${escapeHelp(family.help ?? family.name)}`)
    out.push(`# TYPE ${family.name} ${family.kind}`)
    out.push(...lines)
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`
}

/** The media type of the text format. */
export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
