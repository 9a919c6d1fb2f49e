/**
 * Media benchmarks (docs/API.md "Media"): a real stack (api node + one runner, real Postgres and
 * Redis) with QR channels paired to the fake WhatsApp server (test/fake-whatsapp), so inbound
 * files go through the real Baileys client, its download and decryption from the fake HTTPS media
 * host, and the MediaWorker; outbound files through Baileys' encryption and upload.
 *
 * Per run, on the same stack:
 * - inbound: `--texts` texts, then `--images` 1 MiB PNG images, sent by 10 contacts at once to one
 *   QR channel; messages/s until every text is recorded / every image's media is `ready`
 *   (one channel on one runner: the fake server links one phone, whose messages reach one companion);
 * - sends: `--qr-channels` QR channels each send `--sends` images by `media_id` (one 1 MiB upload)
 *   to as many contacts (the channel's pace bounds them, not the rule per recipient), all at once,
 *   warm-up off; sends/s until every phone received its image, per channel and per runner;
 * - stream: a `--big-mib` (100) MiB document uploaded (`POST /v1/media`), read back
 *   (`GET /v1/media/{id}/content`), then the same size received from a contact (inbound), with
 *   the RSS of the api node and the runner sampled every 100 ms;
 * - uploads: `--uploads` (10) uploads of `--upload-mib` (16) MiB at once, RSS sampled likewise.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \
 *     flock /tmp/sb-bench.lock npm run bench:media -- [--runs 3] [--texts 300] [--images 60] \
 *     [--qr-channels 4] [--sends 8] [--big-mib 100] [--uploads 10] [--upload-mib 16] [--budget-s N]
 */
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { FakeWhatsApp, mediaMember } from "../test/fake-whatsapp/index.js"
import { writeTrustBundle } from "../test/fake-whatsapp/MediaTls.js"
import { call } from "../test/support/Processes.js"
import { cpuSeconds, formatSummary, machine, numberFlag, record, summarize } from "./lib/Measure.js"
import { pairQr, qrEnv, trustFakeWhatsApp, until } from "./lib/QrTrack.js"
import { sampleRss } from "./lib/RssSampler.js"
import { startStack } from "./lib/Stack.js"
import type { Stack } from "./lib/Stack.js"

const RUNS = numberFlag("runs", 3)
const TEXTS = numberFlag("texts", 300)
const IMAGES = numberFlag("images", 60)
const QR_CHANNELS = numberFlag("qr-channels", 4)
const SENDS = numberFlag("sends", 8)
const BIG_MIB = numberFlag("big-mib", 100)
const UPLOADS = numberFlag("uploads", 10)
const UPLOAD_MIB = numberFlag("upload-mib", 16)
const CONTACTS = 10
/** no run begins once this many seconds have passed, if the last run's length would overshoot them */
const BUDGET_S = numberFlag("budget-s", Number.POSITIVE_INFINITY)
/** how long to wait for the messages of a phase before giving up */
const WAIT_MS = numberFlag("wait-s", 300) * 1000

const MiB = 1024 * 1024
const log = (line: string) => console.log(`[media] ${line}`)
const round = (n: number, digits = 1) => Number(n.toFixed(digits))

/** 1 MiB of random bytes, the first starting with `header` (the type is read from the first bytes). */
const block = randomBytes(MiB)
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
const PDF = Buffer.from("%PDF-1.7\n")
const file = (header: Buffer, mib: number) => {
  const first = Buffer.concat([header, block.subarray(header.length)])
  return { first, mib }
}
const png1MiB = file(PNG, 1).first

let auth = { token: "", workspace: "" }
const headers = () => ({ authorization: `Bearer ${auth.token}`, "x-workspace-id": auth.workspace })

/** `POST /v1/media` with a streamed body of `mib` MiB (never held whole here either). */
const upload = async (stack: Stack, contentType: string, header: Buffer, mib: number, filename?: string) => {
  const { first } = file(header, mib)
  let sent = 0
  const body = new ReadableStream<Uint8Array>({
    pull: (controller) => {
      if (sent === mib) return controller.close()
      controller.enqueue(sent === 0 ? first : block)
      sent++
    }
  })
  const query = filename ? `?filename=${encodeURIComponent(filename)}` : ""
  const response = await fetch(`${stack.baseUrl}/v1/media${query}`, {
    method: "POST",
    headers: { ...headers(), "content-type": contentType, "content-length": String(mib * MiB) },
    body,
    duplex: "half"
  } as RequestInit)
  const json = await response.json() as { id?: string; status?: string }
  if (response.status !== 201) throw new Error(`upload: ${response.status} ${JSON.stringify(json).slice(0, 200)}`)
  return json.id!
}

/** `GET /v1/media/{id}/content`, read to the end and dropped; the byte count. */
const download = async (stack: Stack, id: string) => {
  const response = await fetch(`${stack.baseUrl}/v1/media/${id}/content`, { headers: headers() })
  if (response.status !== 200) throw new Error(`content: ${response.status}`)
  let bytes = 0
  for await (const chunk of response.body!) bytes += (chunk as Uint8Array).byteLength
  return bytes
}

const count = async (stack: Stack, sql: string) => (await stack.db.query<{ n: number }>(sql)).rows[0]!.n
const inboundCount = (stack: Stack) =>
  count(stack, "SELECT count(*)::int AS n FROM messages WHERE direction = 'inbound'")
const inboundMedia = (stack: Stack, status: string) =>
  count(stack, `SELECT count(*)::int AS n FROM media WHERE message_id IS NOT NULL AND status = '${status}'`)

const runnerCpu = (stack: Stack) => stack.runners.reduce((sum, r) => sum + cpuSeconds(r.child.pid!), 0)

/** `total` messages from 10 contacts at once; messages/s until `done()` says all are in. */
const inbound = async (
  stack: Stack,
  wa: FakeWhatsApp,
  total: number,
  message: (n: number) => Parameters<ReturnType<FakeWhatsApp["contact"]>["sends"]>[0],
  done: () => Promise<boolean>
) => {
  const contacts = Array.from({ length: CONTACTS }, (_, i) => wa.contact(`+491520000${String(i).padStart(4, "0")}`))
  const cpu0 = runnerCpu(stack)
  const started = Date.now()
  await Promise.all(contacts.map(async (contact, c) => {
    for (let n = c; n < total; n += CONTACTS) await Effect.runPromise(contact.sends(message(n)))
  }))
  const pushedMs = Date.now() - started
  await until("every inbound message", done, WAIT_MS)
  const seconds = (Date.now() - started) / 1000
  return {
    messages: total,
    per_s: round(total / seconds),
    seconds: round(seconds, 2),
    pushed_by_fake_ms: pushedMs,
    runner_cpu_ms_per_message: round(((runnerCpu(stack) - cpu0) * 1000) / total, 2)
  }
}

const inboundScenario = async (stack: Stack, wa: FakeWhatsApp) => {
  const texts0 = await inboundCount(stack)
  const text = await inbound(
    stack,
    wa,
    TEXTS,
    (n) => ({ conversation: `bench inbound ${n}` }),
    async () => (await inboundCount(stack)) >= texts0 + TEXTS
  )
  log(`inbound text: ${text.per_s} msg/s (${TEXTS} in ${text.seconds} s)`)
  // one 1 MiB PNG on the media host, pointed at by every image message (each is downloaded anew)
  const published = await wa.media.publish(png1MiB, "image")
  const [ready0, failed0] = [await inboundMedia(stack, "ready"), await inboundMedia(stack, "failed")]
  const image = await inbound(
    stack,
    wa,
    IMAGES,
    () => ({ imageMessage: mediaMember(published, { mimetype: "image/png" }) }),
    async () =>
      (await inboundMedia(stack, "ready")) + (await inboundMedia(stack, "failed")) >= ready0 + failed0 + IMAGES
  )
  const failed = (await inboundMedia(stack, "failed")) - failed0
  if (failed > 0) {
    const { rows } = await stack.db.query(
      "SELECT failure_reason, count(*)::int AS n FROM media WHERE status = 'failed' GROUP BY 1"
    )
    log(`media failed: ${JSON.stringify(rows)}`)
  }
  log(`inbound 1 MiB image: ${image.per_s} msg/s (${IMAGES} in ${image.seconds} s, ${failed} failed)`)
  return { text, image: { ...image, media_failed: failed } }
}

const sendsScenario = async (stack: Stack, wa: FakeWhatsApp, channels: ReadonlyArray<string>, run: number) => {
  const mediaId = await upload(stack, "image/png", PNG, 1)
  const cpu0 = runnerCpu(stack)
  const started = Date.now()
  const perChannel = await Promise.all(channels.map(async (channelId, i) => {
    // one contact per send: the channel's pace bounds the rate, not the 6-a-minute rule per recipient
    const contacts = Array.from(
      { length: SENDS },
      (_, n) =>
        wa.contact(`+49153${String(run).padStart(2, "0")}${String(i).padStart(2, "0")}${String(n).padStart(4, "0")}`)
    )
    const before = contacts.map((c) => c.received.length)
    for (const [n, contact] of contacts.entries()) {
      const sent = await call(stack.baseUrl, "POST", "/v1/messages", {
        ...auth,
        body: { channel_id: channelId, to: contact.number, image: { media_id: mediaId, caption: `bench ${n}` } }
      })
      if (sent.status !== 201) throw new Error(`image send: ${sent.status} ${sent.text.slice(0, 200)}`)
    }
    const acceptedMs = Date.now() - started
    await until("the images on the phones", () => contacts.every((c, n) => c.received.length > before[n]!), WAIT_MS)
      .catch(
        async (error) => {
          const { rows } = await stack.db.query(
            "SELECT status, failure::text AS failure, count(*)::int AS n FROM messages WHERE channel_id = $1 AND direction = 'outbound' GROUP BY 1, 2",
            [channelId]
          )
          throw new Error(`${error}: ${JSON.stringify(rows)}`)
        }
      )
    const seconds = (Date.now() - started) / 1000
    return { accepted_ms: acceptedMs, seconds, per_s: SENDS / seconds }
  }))
  const seconds = (Date.now() - started) / 1000
  const total = SENDS * channels.length
  const result = {
    channels: channels.length,
    sends_per_channel: SENDS,
    per_channel_per_s: round(summarize(perChannel.map((c) => c.per_s)).median, 3),
    per_runner_per_s: round(total / seconds, 3),
    seconds: round(seconds, 2),
    all_accepted_ms: Math.max(...perChannel.map((c) => c.accepted_ms)),
    runner_cpu_ms_per_send: round(((runnerCpu(stack) - cpu0) * 1000) / total, 1)
  }
  log(`image sends: ${result.per_channel_per_s}/s per channel, ${result.per_runner_per_s}/s per runner`)
  return result
}

const pids = (stack: Stack) => ({ api: stack.api.child.pid!, runner: stack.runners[0]!.child.pid! })

/** Runs `phase` with RSS sampled every 100 ms (1 s of baseline before it). */
const withRss = async <A>(stack: Stack, phase: () => Promise<A>) => {
  const rss = sampleRss(pids(stack))
  await rss.settle()
  const mark = rss.mark()
  const started = Date.now()
  const result = await phase()
  return { result, seconds: round((Date.now() - started) / 1000, 2), rss: rss.stop(mark) }
}

const streamScenario = async (stack: Stack, wa: FakeWhatsApp) => {
  const up = await withRss(stack, () => upload(stack, "application/pdf", PDF, BIG_MIB, "big.pdf"))
  const down = await withRss(stack, () => download(stack, up.result))
  if (down.result !== BIG_MIB * MiB) throw new Error(`read back ${down.result} bytes`)
  // the same size from a contact: the runner's MediaWorker downloads, decrypts and stores it
  const bytes = Buffer.concat([file(PDF, 1).first, ...Array.from({ length: BIG_MIB - 1 }, () => block)])
  const published = await wa.media.publish(bytes, "document")
  const ready0 = await inboundMedia(stack, "ready")
  const contact = wa.contact("+4915400000001")
  const inboundBig = await withRss(stack, async () => {
    await Effect.runPromise(
      contact.sends({
        documentMessage: mediaMember(published, { mimetype: "application/pdf", fileName: "big.pdf" })
      })
    )
    await until("the inbound document", async () => (await inboundMedia(stack, "ready")) > ready0, WAIT_MS * 2)
  })
  const mib = (s: { seconds: number }) => round(BIG_MIB / s.seconds)
  const result = {
    mib: BIG_MIB,
    upload: { seconds: up.seconds, mib_per_s: mib(up), rss: up.rss },
    download: { seconds: down.seconds, mib_per_s: mib(down), rss: down.rss },
    inbound: { seconds: inboundBig.seconds, mib_per_s: mib(inboundBig), rss: inboundBig.rss }
  }
  for (
    const [name, phase] of Object.entries({ upload: result.upload, download: result.download, inbound: result.inbound })
  ) {
    log(
      `${BIG_MIB} MiB ${name}: ${phase.mib_per_s} MiB/s, RSS growth api ${phase.rss["api"]!.growth_mib} MiB, ` +
        `runner ${phase.rss["runner"]!.growth_mib} MiB`
    )
  }
  return result
}

const uploadsScenario = async (stack: Stack) => {
  const phase = await withRss(stack, () =>
    Promise.all(
      Array.from({ length: UPLOADS }, (_, i) => upload(stack, "application/pdf", PDF, UPLOAD_MIB, `u${i}.pdf`))
    ))
  const result = {
    uploads: UPLOADS,
    mib_each: UPLOAD_MIB,
    seconds: phase.seconds,
    mib_per_s: round((UPLOADS * UPLOAD_MIB) / phase.seconds),
    rss: phase.rss
  }
  log(
    `${UPLOADS} x ${UPLOAD_MIB} MiB at once: ${result.mib_per_s} MiB/s, RSS growth api ${
      result.rss["api"]!.growth_mib
    } MiB`
  )
  return result
}

const main = async () => {
  log(`machine: ${JSON.stringify(machine())}`)
  // the services trust the fake media host's certificate as the tests' processes do (globalSetup)
  process.env["NODE_EXTRA_CA_CERTS"] = writeTrustBundle(join(tmpdir(), "switchboard-bench"))
  const wa = await FakeWhatsApp.start({ phoneNumber: "+15550007777" })
  const stack = await startStack({
    name: "media",
    runners: 1,
    env: qrEnv(wa),
    runnerPreload: [trustFakeWhatsApp]
  })
  const lines: Array<Record<string, any>> = []
  try {
    auth = { token: stack.sessionToken, workspace: stack.workspaceId }
    const channels: Array<string> = []
    for (let i = 0; i < QR_CHANNELS; i++) channels.push(await pairQr(stack, wa, `bench-qr-${i}`))
    // the fake phone's numbers are not new to WhatsApp: without warm-up, new-contact sends are
    // bounded only by the channel's pace and the 24 h safety window (docs/LIMITS.md "Number protection")
    for (const channel of channels) {
      await stack.admin(["qr-warm-up", "--workspace", stack.workspaceId, "--channel", channel, "--off"])
    }
    log(`${channels.length} QR channels paired`)
    const began = Date.now()
    let lastRunS = 0
    for (let run = 1; run <= RUNS; run++) {
      if ((Date.now() - began) / 1000 + lastRunS > BUDGET_S) {
        log(`stopping after ${run - 1} runs: --budget-s ${BUDGET_S}`)
        break
      }
      const runStarted = Date.now()
      // user access tokens expire after 15 minutes
      auth = { token: await stack.login(), workspace: stack.workspaceId }
      const load = () => Number(loadavg()[0]!.toFixed(2))
      const line = {
        run,
        load_1m_before: load(),
        inbound: await inboundScenario(stack, wa),
        sends: await sendsScenario(stack, wa, channels, run),
        stream: await streamScenario(stack, wa),
        uploads: await uploadsScenario(stack),
        load_1m_after: load()
      }
      record("media", line)
      lines.push(line)
      lastRunS = (Date.now() - runStarted) / 1000
      log(`run ${run} took ${lastRunS.toFixed(0)} s`)
    }
    const s = (f: (l: Record<string, any>) => number, digits = 1) => formatSummary(summarize(lines.map(f)), digits)
    console.log(`\nsummary over ${lines.length} runs (median [min–max]):`)
    console.log(`  inbound text msg/s           ${s((l) => l.inbound.text.per_s)}`)
    console.log(`  inbound 1 MiB image msg/s    ${s((l) => l.inbound.image.per_s)}`)
    console.log(`  image sends/s per channel    ${s((l) => l.sends.per_channel_per_s, 3)}`)
    console.log(`  image sends/s per runner     ${s((l) => l.sends.per_runner_per_s, 3)}`)
    for (const phase of ["upload", "download", "inbound"]) {
      console.log(
        `  ${BIG_MIB} MiB ${phase.padEnd(8)} MiB/s ${s((l) => l.stream[phase].mib_per_s)}, RSS growth api ${
          s((l) => l.stream[phase].rss.api.growth_mib)
        } MiB, runner ${s((l) => l.stream[phase].rss.runner.growth_mib)} MiB`
      )
    }
    console.log(
      `  ${UPLOADS} x ${UPLOAD_MIB} MiB uploads MiB/s ${s((l) => l.uploads.mib_per_s)}, RSS growth api ${
        s((l) => l.uploads.rss.api.growth_mib)
      } MiB (peak ${s((l) => l.uploads.rss.api.peak_mib)} MiB)`
    )
  } finally {
    await stack.stop()
    await wa.stop()
  }
}

await main()
