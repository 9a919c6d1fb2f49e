import { assert, describe, it } from "@effect/vitest"
import { MetricsConfig, PrometheusText } from "@switchboard/infra"
import { ConfigProvider, Effect, Either, Metric, MetricBoundaries, Option } from "effect"
import { parse, samples, total } from "../../../test/support/PrometheusParser.js"

/** The exposition of this test's own metrics (the registry is the process's). */
const exposition = (prefix: string) =>
  Effect.map(
    Metric.snapshot,
    (pairs) => PrometheusText.render(pairs.filter((p) => p.metricKey.name.startsWith(prefix)))
  )

describe("PrometheusText", () => {
  it.effect("renders an incremental counter as a counter whose name ends in _total, tags as labels", () =>
    Effect.gen(function*() {
      const sends = Metric.counter("t1_sends", { description: "Sends", incremental: true })
      yield* Metric.incrementBy(Metric.tagged(sends, "reason", "rate_limited"), 2)
      yield* Metric.increment(Metric.tagged(sends, "reason", "validation_error"))
      yield* Metric.incrementBy(Metric.tagged(sends, "reason", "rate_limited"), -5) // refused: incremental
      const text = yield* exposition("t1_")
      assert.include(text, "# HELP t1_sends_total Sends\n# TYPE t1_sends_total counter\n")
      const families = parse(text)
      assert.strictEqual(families.get("t1_sends_total")?.type, "counter")
      assert.strictEqual(total(families, "t1_sends_total", { reason: "rate_limited" }), 2)
      assert.strictEqual(total(families, "t1_sends_total"), 3)
    }))

  it.effect("renders a counter that may go down as a gauge", () =>
    Effect.gen(function*() {
      yield* Metric.incrementBy(Metric.counter("t2_level"), -3)
      const families = parse(yield* exposition("t2_"))
      assert.strictEqual(families.get("t2_level")?.type, "gauge")
      assert.strictEqual(total(families, "t2_level"), -3)
    }))

  it.effect("renders gauges, bigint ones included", () =>
    Effect.gen(function*() {
      yield* Metric.set(Metric.gauge("t3_pool", { description: "Pool" }), 4.5)
      yield* Metric.set(Metric.gauge("t3_shards", { bigint: true }), BigInt(300))
      const families = parse(yield* exposition("t3_"))
      assert.strictEqual(total(families, "t3_pool"), 4.5)
      assert.strictEqual(total(families, "t3_shards"), 300)
      assert.strictEqual(families.get("t3_shards")?.help, "t3_shards")
    }))

  it.effect("renders a histogram as cumulative _bucket lines up to +Inf, _sum and _count", () =>
    Effect.gen(function*() {
      const latency = Metric.histogram(
        "t4_latency_seconds",
        MetricBoundaries.fromIterable([0.1, 0.5, 1]),
        "Latency"
      ).pipe(Metric.tagged("route", "/v1/messages"))
      for (const v of [0.05, 0.2, 0.3, 0.7, 3]) yield* Metric.update(latency, v)
      const text = yield* exposition("t4_")
      const families = parse(text)
      assert.strictEqual(families.get("t4_latency_seconds")?.type, "histogram")
      const buckets = samples(families, "t4_latency_seconds_bucket").map((s) => [s.labels["le"], s.value])
      assert.deepStrictEqual(buckets, [["0.1", 1], ["0.5", 3], ["1", 4], ["+Inf", 5]])
      assert.strictEqual(total(families, "t4_latency_seconds_count", { route: "/v1/messages" }), 5)
      assert.closeTo(total(families, "t4_latency_seconds_sum"), 4.25, 1e-9)
      assert.strictEqual(text.match(/le="\+Inf"/g)?.length, 1, "one +Inf bucket, not two")
    }))

  it.effect("escapes label values and help text", () =>
    Effect.gen(function*() {
      const odd = "a \"quoted\" \\ back\nslash"
      yield* Metric.set(
        Metric.gauge("t5_odd", { description: "line one\nline \\two" }).pipe(Metric.tagged("v", odd)),
        1
      )
      const text = yield* exposition("t5_")
      assert.include(text, "# HELP t5_odd line one\\nline \\\\two\n")
      assert.include(text, "t5_odd{v=\"a \\\"quoted\\\" \\\\ back\\nslash\"} 1\n")
      assert.strictEqual(samples(parse(text), "t5_odd")[0]?.labels["v"], odd)
    }))

  it.effect("renders a summary with quantile labels", () =>
    Effect.gen(function*() {
      const summary = Metric.summary({
        name: "t6_lag",
        maxAge: "1 minute",
        maxSize: 100,
        error: 0.01,
        quantiles: [0.5, 1]
      })
      for (const v of [1, 2, 3]) yield* Metric.update(summary, v)
      const families = parse(yield* exposition("t6_"))
      assert.strictEqual(families.get("t6_lag")?.type, "summary")
      assert.strictEqual(total(families, "t6_lag", { quantile: "1" }), 3)
      assert.strictEqual(total(families, "t6_lag_count"), 3)
    }))

  it.effect("renders each series once when two registry keys differ only in what the format does not show", () =>
    Effect.gen(function*() {
      // the same name and tags, two descriptions: two keys in Effect's registry, one series here
      // (a runner's /metrics once showed effect_fiber_lifetimes twice, which Prometheus refuses)
      const boundaries = MetricBoundaries.fromIterable([1, 10])
      yield* Metric.update(Metric.tagged(Metric.histogram("t7_wait", boundaries, "a"), "unit", "ms"), 0.5)
      yield* Metric.update(Metric.tagged(Metric.histogram("t7_wait", boundaries, "b"), "unit", "ms"), 5)
      yield* Metric.update(Metric.tagged(Metric.histogram("t7_wait", boundaries, "b"), "unit", "ms"), 50)
      yield* Metric.incrementBy(Metric.counter("t7_done", { incremental: true, description: "a" }), 2)
      yield* Metric.incrementBy(Metric.counter("t7_done", { incremental: true, description: "b" }), 3)
      const families = parse(yield* exposition("t7_"))
      assert.deepStrictEqual(
        samples(families, "t7_wait_bucket", { unit: "ms" }).map((s) => [s.labels["le"], s.value]),
        [["1", 1], ["10", 2], ["+Inf", 3]]
      )
      assert.strictEqual(total(families, "t7_wait_sum"), 55.5)
      assert.strictEqual(total(families, "t7_wait_count"), 3)
      assert.strictEqual(total(families, "t7_done_total"), 5)
    }))

  it("sanitises names and formats special values", () => {
    assert.strictEqual(PrometheusText.metricName("effect.cluster-entities"), "effect_cluster_entities")
    assert.strictEqual(PrometheusText.labelName("1st"), "_1st")
    assert.strictEqual(PrometheusText.formatValue(Number.POSITIVE_INFINITY), "+Inf")
    assert.strictEqual(PrometheusText.formatValue(Number.NaN), "NaN")
  })
})

describe("the strict parser refuses what Prometheus would", () => {
  const refuses = (text: string, why: RegExp) => assert.throws(() => parse(text), why)
  it("a sample before its TYPE, a split family, a counter without _total, broken buckets", () => {
    refuses("a 1\n", /before its # TYPE/)
    refuses("# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x=\"1\"} 2\n", /split/)
    refuses("# TYPE a counter\na 1\n", /_total/)
    refuses(
      "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n",
      /cumulative/
    )
    refuses("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_sum 1\nh_count 2\n", /\+Inf/)
    refuses("# TYPE g gauge\ng{v=\"a\\x\"} 1\n", /escape/)
    refuses("# TYPE g gauge\ng 1\ng 2\n", /twice/)
  })
})

describe("MetricsConfig", () => {
  const fromEnv = (env: Record<string, string>) =>
    Effect.runSync(
      Effect.either(MetricsConfig.config).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
      )
    )
  it("is off without METRICS_PORT (or with it empty) and listens on the loopback address by default", () => {
    const off = fromEnv({})
    assert.isTrue(Either.isRight(off) && Option.isNone(off.right.port) && off.right.host === "127.0.0.1")
    const empty = fromEnv({ METRICS_PORT: "" })
    assert.isTrue(Either.isRight(empty) && Option.isNone(empty.right.port))
    const on = fromEnv({ METRICS_PORT: "9464", METRICS_HOST: "10.0.0.5" })
    assert.isTrue(Either.isRight(on) && Option.getOrNull(on.right.port) === 9464 && on.right.host === "10.0.0.5")
    assert.isTrue(Either.isLeft(fromEnv({ METRICS_PORT: "http" })))
    assert.isTrue(Either.isLeft(fromEnv({ METRICS_PORT: "70000" })))
  })
})
