/**
 * QR inbound during a database outage (bench/chaos.ts `qr-inbound-outage`; docs/OPERATING.md
 * "Provider input during a database outage"): an api node and a runner as real processes, the
 * runner's Postgres behind a proxy (test/support/PgProxy.ts, so the machine's shared server is
 * never stopped), one QR channel paired to the fake WhatsApp server. `contacts` contacts write
 * once (their sessions exist), then the proxy refuses every connection for `outageS` s while they
 * send texts at `rate` a second. Counted straight from the database afterwards: texts lost (never
 * recorded), doubled (two rows for one WhatsApp id, or two `message.received`), and how long after
 * Postgres came back the last one was recorded.
 */
import { withDatabase } from "@switchboard/db/testing"
import { Effect } from "effect"
import { FakeWhatsApp } from "../../test/fake-whatsapp/index.js"
import * as PgProxy from "../../test/support/PgProxy.js"
import { pairQr, qrEnv, trustFakeWhatsApp, until } from "./QrTrack.js"
import { requireRealServers, type Stack, startStack } from "./Stack.js"

const NAME = "chaos_qr_outage"

export interface Options {
  readonly outageS: number
  readonly rate: number
  readonly contacts: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export const qrInboundOutage = async (options: Options) => {
  const { databaseUrl } = requireRealServers()
  const wa = await FakeWhatsApp.start({ phoneNumber: "+15550007171" })
  // the proxy forwards to the server; the database is named in each connection's startup
  const proxy = await PgProxy.start(databaseUrl)
  const runnerUrl = new URL(withDatabase(databaseUrl, `sbt_e2e_bench_${NAME}_${process.pid}`))
  runnerUrl.hostname = "127.0.0.1"
  runnerUrl.port = String(proxy.port)
  const stack = await startStack({
    name: NAME,
    env: { ...qrEnv(wa), LOG_LEVEL: "warn" },
    runnerPreload: [trustFakeWhatsApp],
    runnerEnv: () => ({ DATABASE_URL: runnerUrl.toString() })
  }).catch(async (error) => {
    await proxy.close()
    await wa.stop()
    throw error
  })
  try {
    return await measure(stack, wa, proxy, options)
  } finally {
    await stack.stop()
    await proxy.close()
    await wa.stop()
  }
}

const measure = async (stack: Stack, wa: FakeWhatsApp, proxy: PgProxy.PgProxy, options: Options) => {
  const channelId = await pairQr(stack, wa, "outage")
  const recorded = async (ids: ReadonlyArray<string>) =>
    (await stack.db.query<{ provider_message_id: string; n: number }>(
      `SELECT provider_message_id, count(*)::int AS n FROM messages
       WHERE channel_id = $1 AND direction = 'inbound' AND provider_message_id = ANY($2)
       GROUP BY provider_message_id`,
      [channelId, ids]
    )).rows
  const contacts = Array.from(
    { length: options.contacts },
    (_, i) => wa.contact(`+49151${String(2000000 + i).padStart(7, "0")}`)
  )
  const hellos: Array<string> = []
  for (const c of contacts) hellos.push(await Effect.runPromise(c.says("hello")))
  await until("the first messages recorded", async () => (await recorded(hellos)).length === hellos.length, 60_000)

  const outage = proxy.outage(options.outageS * 1000)
  const sent: Array<string> = []
  const started = Date.now()
  for (let i = 0; Date.now() - started < options.outageS * 1000 - 500; i++) {
    sent.push(await Effect.runPromise(contacts[i % contacts.length]!.says(`during the outage ${i}`)))
    await sleep(1000 / options.rate)
  }
  await outage
  const back = Date.now()
  let rows = await recorded(sent)
  while (rows.length < sent.length && Date.now() < back + 120_000) {
    await sleep(100)
    rows = await recorded(sent)
  }
  const drained = rows.length === sent.length ? Date.now() - back : undefined
  // a late duplicate would be a second write of an item already recorded: give it a moment
  await sleep(2_000)
  rows = await recorded(sent)
  const events = await stack.db.query<{ object_id: string }>(
    `SELECT e.object_id FROM events e JOIN messages m ON m.id = e.object_id
     WHERE e.type = 'message.received' AND m.provider_message_id = ANY($1)
     GROUP BY e.object_id HAVING count(*) > 1`,
    [sent]
  )
  return {
    texts_sent: sent.length,
    lost: sent.length - rows.length,
    doubled: rows.filter((r) => r.n > 1).length + events.rows.length,
    drain_after_return_s: drained === undefined ? null : Math.round(drained / 10) / 100
  }
}
