/**
 * Benchmark 5, failover: two runners, steady sends over sandbox channels through the api node,
 * `kill -9` of one runner mid-stream, repeated `--runs` times on one stack (the killed runner is
 * started again, on new ports, between repetitions; runners are killed in turn). Per repetition:
 *
 * - recovery: seconds from the kill until dispatch resumed on EVERY channel that lived on the
 *   killed runner (its first `dispatching` after the kill). A channel counts as moved when a
 *   message sent to it around the kill waited over 2 s for its dispatch (the survivor's channels
 *   dispatch within a few hundred ms: they are paced at 2 msg/s and get one message every
 *   `channels / rate` seconds);
 * - lost: accepted (201) but never taken by the simulated network (must be 0);
 * - doubled: messages the network recorded more than one delivery for, or that were reported
 *   `sent` / `delivered` / `read` more than once (must be 0); `reoffered` counts messages
 *   dispatched again after the failover that the network recognised by id and did not deliver
 *   again (allowed: at-least-once dispatch, exactly-once delivery);
 * - stuck: accepted by the network but never `read` within `--drain` seconds of the last send.
 *
 *   flock /tmp/sb-bench.lock npm run bench:failover -- --runs 4 --label after
 *   npm run bench:failover -- --runs 3 --signal SIGTERM --label sigterm   # a clean stop instead of a crash
 *   npm run bench:failover -- --runs 3 --signal SIGSTOP --pause 16 --send-seconds 30 --label paused  # kill -STOP, -CONT
 *   npm run bench:failover -- --summary after      # the summary line over every recorded repetition
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { freePort, startService } from "../test/support/Processes.js"
import type { ServiceProcess } from "../test/support/Processes.js"
import { flag, formatSummary, machine, numberFlag, record, summarize } from "./lib/Measure.js"
import { RECIPIENT, startStack } from "./lib/Stack.js"

const RUNS = numberFlag("runs", 4)
const CHANNELS = numberFlag("channels", 12)
/** sends per second over all channels */
const RATE = numberFlag("rate", 6)
const SEND_SECONDS = numberFlag("send-seconds", 18)
const KILL_AT_SECONDS = numberFlag("kill-at", 6)
const DRAIN_SECONDS = numberFlag("drain", 100)
const LABEL = String(flag("label") ?? "run")
/**
 * SIGKILL (a crash), SIGTERM (a clean stop: a rolling restart, scaling down) or SIGSTOP (a paused
 * process: a GC pause, a frozen VM), continued with SIGCONT after `--pause` seconds
 */
const SIGNAL = String(flag("signal") ?? "SIGKILL") as "SIGKILL" | "SIGTERM" | "SIGSTOP"
const PAUSE_SECONDS = numberFlag("pause", 16)
const MOVED_STALL_MS = 2000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const log = (line: string) => console.log(`[failover] ${line}`)

interface Repetition {
  readonly rep: number
  readonly victim: number
  readonly accepted: number
  readonly refused: number
  readonly moved_channels: number
  readonly recovery_s: number
  readonly recovery_median_s: number
  /** the longest dispatch wait of a message sent from 1 s before the stop on */
  readonly max_dispatch_wait_s: number
  readonly lost: number
  readonly doubled: number
  readonly reoffered: number
  readonly stuck: number
  readonly drained_s: number
}

const summary = (label: string) => {
  const lines = readFileSync(resolve(import.meta.dirname, "results", "failover.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l))
    .filter((r) => r.label === label && r.rep !== undefined)
  const total = (k: string) => lines.reduce((n, r) => n + Number(r[k]), 0)
  const recovery = summarize(lines.map((r) => r.recovery_s))
  const waits = lines.filter((r) => r.max_dispatch_wait_s !== undefined).map((r) => r.max_dispatch_wait_s)
  return `failover ${label}: ${lines.length} repetitions, recovery ${formatSummary(recovery)} s, ` +
    (waits.length > 0 ? `longest dispatch wait ${formatSummary(summarize(waits))} s, ` : "") +
    `messages ${total("accepted")}, lost ${total("lost")}, doubled ${total("doubled")}, ` +
    `stuck ${total("stuck")}, re-offered (deduplicated by the network) ${total("reoffered")}`
}

const main = async () => {
  const summaryOf = flag("summary")
  if (typeof summaryOf === "string") {
    console.log(summary(summaryOf))
    return
  }
  log(`machine ${JSON.stringify(machine())}`)
  const stack = await startStack({ name: "failover", runners: 2, sandboxNumbers: CHANNELS })
  const runners: Array<ServiceProcess> = [...stack.runners]
  const extra: Array<ServiceProcess> = []
  try {
    const channels = await stack.sandboxChannels(CHANNELS)
    for (let rep = 1; rep <= RUNS; rep++) {
      const victim = rep % 2
      const result = await repetition(rep, victim, channels)
      const pause = SIGNAL === "SIGSTOP" ? { pause_s: PAUSE_SECONDS } : {}
      console.log(
        record("failover", { label: LABEL, signal: SIGNAL, ...pause, channels: CHANNELS, rate: RATE, ...result })
      )
      if (SIGNAL === "SIGSTOP") {
        // the paused runner woke up by itself: it takes its share of the shards again
        await sleep(10_000)
        continue
      }
      // the killed runner comes back (new ports), and takes its share of the shards again
      const [cluster, http] = [await freePort(), await freePort()]
      const fresh = startService("runner", { ...stack.env, HOST: "127.0.0.1", PORT: String(cluster) }, http)
      extra.push(fresh)
      runners[victim] = fresh
      await waitForRunner(`127.0.0.1:${cluster}`)
    }
  } finally {
    await Promise.all(extra.map((p) => p.stop()))
    await stack.stop()
  }

  async function waitForRunner(address: string) {
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      const rows = await stack.db.query("SELECT 1 FROM cluster_runners WHERE address = $1 AND healthy", [address])
      if ((rows.rowCount ?? 0) > 0) break
      await sleep(500)
    }
    // shard locks move over within a few lock refreshes (2 s)
    await sleep(10_000)
  }

  async function repetition(rep: number, victim: number, channels: ReadonlyArray<string>): Promise<Repetition> {
    const sends: Array<Promise<{ id: string | undefined; status: number }>> = []
    const started = Date.now()
    const total = SEND_SECONDS * RATE
    let killedAt = 0
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / RATE
      const wait = due - Date.now()
      if (wait > 0) await sleep(wait)
      if (killedAt === 0 && Date.now() - started >= KILL_AT_SECONDS * 1000) {
        const stopped = runners[victim]!
        stopped.child.kill(SIGNAL)
        killedAt = Date.now()
        if (SIGNAL === "SIGSTOP") setTimeout(() => stopped.child.kill("SIGCONT"), PAUSE_SECONDS * 1000)
      }
      const channel_id = channels[i % channels.length]!
      sends.push(
        fetch(`${stack.baseUrl}/v1/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${stack.apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({ to: RECIPIENT, channel_id, text: { body: `rep ${rep} #${i}` } })
        }).then(async (r) => ({
          status: r.status,
          id: r.status === 201 ? ((await r.json()) as { id: string }).id : undefined
        }))
          .catch(() => ({ status: 0, id: undefined }))
      )
    }
    const answers = await Promise.all(sends)
    const ids = answers.flatMap((a) => (a.id ? [a.id] : []))
    const lastSend = Date.now()

    // drained: every accepted message read (or the time is up)
    let drainedAt = 0
    while (Date.now() - lastSend < DRAIN_SECONDS * 1000) {
      const open = await stack.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM messages WHERE id = ANY($1) AND status <> 'read'",
        [ids]
      )
      if (open.rows[0]!.n === 0) {
        drainedAt = Date.now()
        break
      }
      await sleep(500)
    }

    const dispatches = await stack.db.query<{ channel_id: string; created_at: Date; at: Date }>(
      `SELECT m.channel_id, m.created_at, t.at FROM message_transitions t JOIN messages m ON m.id = t.message_id
       WHERE t.message_id = ANY($1) AND t.to_state = 'dispatching' ORDER BY t.at`,
      [ids]
    )
    const byChannel = new Map<string, Array<{ created: number; at: number }>>()
    for (const row of dispatches.rows) {
      const list = byChannel.get(row.channel_id) ?? []
      list.push({ created: row.created_at.getTime(), at: row.at.getTime() })
      byChannel.set(row.channel_id, list)
    }
    const recoveries: Array<number> = []
    // the longest any message sent from just before the stop waited for its dispatch (a clean
    // stop hands the shards over before any channel stalls past MOVED_STALL_MS)
    let maxWaitMs = 0
    for (const list of byChannel.values()) {
      for (const d of list) if (d.created >= killedAt - 1000) maxWaitMs = Math.max(maxWaitMs, d.at - d.created)
    }
    for (const list of byChannel.values()) {
      // messages sent from just before the kill on: one that waited long lived on the killed runner
      const around = list.filter((d) => d.created >= killedAt - 1000)
      const stalled = around.some((d) => d.at - d.created > MOVED_STALL_MS)
      if (!stalled) continue
      const resumed = list.find((d) => d.at >= killedAt)
      if (resumed) recoveries.push((resumed.at - killedAt) / 1000)
    }

    const network = await stack.db.query<{ message_id: string; offers: number }>(
      "SELECT message_id, offers FROM sandbox_deliveries WHERE message_id = ANY($1) AND accepted_at IS NOT NULL",
      [ids]
    )
    const taken = new Set(network.rows.map((r) => r.message_id))
    const repeatedReports = await stack.db.query(
      `SELECT object_id FROM events WHERE object_id = ANY($1) AND type IN ('message.sent', 'message.delivered', 'message.read')
       GROUP BY object_id, type HAVING count(*) > 1`,
      [ids]
    )
    const unread = await stack.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM messages WHERE id = ANY($1) AND status <> 'read'",
      [ids]
    )
    const doubledIds = new Set(repeatedReports.rows.map((r) => r.object_id))
    const result: Repetition = {
      rep,
      victim,
      accepted: ids.length,
      refused: answers.length - ids.length,
      moved_channels: recoveries.length,
      recovery_s: Number(Math.max(0, ...recoveries).toFixed(2)),
      max_dispatch_wait_s: Number((maxWaitMs / 1000).toFixed(2)),
      recovery_median_s: Number((recoveries.sort((a, b) => a - b)[Math.floor(recoveries.length / 2)] ?? 0).toFixed(2)),
      lost: ids.filter((id) => !taken.has(id)).length,
      doubled: doubledIds.size,
      reoffered: network.rows.filter((r) => r.offers > 1).length,
      stuck: unread.rows[0]!.n - ids.filter((id) => !taken.has(id)).length,
      drained_s: drainedAt === 0 ? Number.NaN : Number(((drainedAt - killedAt) / 1000).toFixed(1))
    }
    log(
      `rep ${rep}: killed runner ${victim}, ${result.moved_channels} channels moved, recovery ${result.recovery_s} s, ` +
        `lost ${result.lost}, doubled ${result.doubled}, stuck ${result.stuck}, re-offered ${result.reoffered}`
    )
    return result
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
