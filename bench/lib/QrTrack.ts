/**
 * The QR part of a soak (bench/soak.ts): QR channels against the fake WhatsApp server, paired
 * over the API's SSE stream, used for sends, logged out, and paired again, in a loop. Every third
 * pairing drops its stream after the code arrives and watches the rest on a new one (a browser
 * tab closed mid-pairing). Counts what worked and what did not; the soak's samples show whether
 * the cycles leak.
 */
import { Effect } from "effect"
import { resolve } from "node:path"
import type { FakeWhatsApp } from "../../test/fake-whatsapp/index.js"
import { call } from "../../test/support/Processes.js"
import type { Stack } from "./Stack.js"

/** The runner preload that trusts the fake server's certificate root. */
export const trustFakeWhatsApp = resolve(import.meta.dirname, "../../test/qr/trustFakeWhatsApp.ts")

export const qrEnv = (wa: FakeWhatsApp): Record<string, string> => ({
  QR_WEBSOCKET_URL: wa.url,
  QR_RECONNECT_BASE_DELAY: "100 millis",
  QR_RECONNECT_MAX_DELAY: "1 second",
  TEST_FAKE_WHATSAPP_ROOT: Buffer.from(wa.rootPublicKey).toString("base64")
})

export interface QrCounts {
  cycles: number
  paired: number
  streams_dropped: number
  texts_sent: number
  texts_received: number
  failures: number
  last_failure: string
  /** sends refused by the QR safety cap (200 a day per channel): the lane moves to a new channel */
  safety_capped: number
  channels: number
}

interface Stream {
  readonly frames: Array<{ event: string; data: any }>
  readonly close: () => void
}

export const openStream = async (href: string, headers: Record<string, string>): Promise<Stream> => {
  const abort = new AbortController()
  const response = await fetch(href, { headers, signal: abort.signal })
  if (response.status !== 200) throw new Error(`stream: ${response.status}`)
  const frames: Stream["frames"] = []
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  void (async () => {
    let buffer = ""
    while (true) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }))
      if (done) return
      buffer += value
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const event = /^event: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (event && data) frames.push({ event, data: JSON.parse(data) })
      }
    }
  })()
  return { frames, close: () => abort.abort() }
}

export const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Runs pairing cycles on `channels` QR channels until `running()` is false. */
export const qrTrack = async (stack: Stack, wa: FakeWhatsApp, channels: number, running: () => boolean) => {
  const counts: QrCounts = {
    cycles: 0,
    paired: 0,
    streams_dropped: 0,
    texts_sent: 0,
    texts_received: 0,
    failures: 0,
    last_failure: "",
    safety_capped: 0,
    channels: 0
  }
  // user access tokens expire (15 minutes): log in again every 10
  let auth = { token: stack.sessionToken, workspace: stack.workspaceId }
  let loggedInAt = Date.now()
  const headers = () => ({ authorization: `Bearer ${auth.token}`, "x-workspace-id": stack.workspaceId })
  const freshSession = async () => {
    if (Date.now() - loggedInAt < 10 * 60_000) return
    auth = { token: await stack.login(), workspace: stack.workspaceId }
    loggedInAt = Date.now()
  }
  const status = async (id: string) => (await call(stack.baseUrl, "GET", `/v1/channels/${id}`, auth)).body?.status

  const cycle = async (channelId: string, lane: number) => {
    counts.cycles++
    await freshSession()
    const href = `${stack.baseUrl}/v1/channels/${channelId}/qr/stream`
    let stream = await openStream(href, headers())
    try {
      const started = await call(stack.baseUrl, "POST", `/v1/channels/${channelId}/qr/start`, auth)
      if (started.status !== 200) throw new Error(`qr/start ${started.status}`)
      await until("a QR code", () => stream.frames.some((f) => f.event === "qr.updated"))
      const code = stream.frames.find((f) => f.event === "qr.updated")!.data.qr as string
      if (counts.cycles % 3 === 0) {
        stream.close()
        counts.streams_dropped++
        stream = await openStream(href, headers())
      }
      await Effect.runPromise(wa.phone.scan(code))
      await until("connected", async () => (await status(channelId)) === "connected")
      counts.paired++
      const contact = wa.contact(`+49151${String(1000000 + lane * 1000 + (counts.cycles % 1000)).padStart(7, "0")}`)
      let accepted = 0
      let capped = false
      for (let i = 0; i < 5; i++) {
        const sent = await call(stack.baseUrl, "POST", "/v1/messages", {
          ...auth,
          body: { channel_id: channelId, to: contact.number, text: { body: `qr soak ${counts.cycles}.${i}` } }
        })
        if (sent.status === 201) accepted++
        else if (sent.status === 429 && sent.body?.error?.code === "QR_SAFETY_LIMIT_REACHED") capped = true
        else throw new Error(`send ${sent.status}: ${String(sent.body?.error?.code)}`)
      }
      counts.texts_sent += accepted
      if (capped) counts.safety_capped++
      await until("the texts", () => contact.received.length >= accepted)
      counts.texts_received += contact.received.length
      const out = await call(stack.baseUrl, "POST", `/v1/channels/${channelId}/qr/logout`, auth)
      if (out.status !== 200) throw new Error(`qr/logout ${out.status}`)
      await until("disconnected", async () => (await status(channelId)) === "disconnected")
      return capped
    } finally {
      stream.close()
    }
  }

  const lane = async (i: number) => {
    const created = await call(stack.baseUrl, "POST", "/v1/channels", {
      ...auth,
      body: { provider: "qr", name: `qr-${i}` }
    })
    if (created.status !== 201) throw new Error(`qr channel: ${created.text}`)
    while (running()) {
      await cycle(created.body.id, i).catch(async (error) => {
        counts.failures++
        counts.last_failure = String(error).slice(0, 200)
        // start the next cycle from a logged-out channel, after a pause (never a hot loop)
        await call(stack.baseUrl, "POST", `/v1/channels/${created.body.id}/qr/logout`, auth).catch(() => undefined)
        await new Promise((r) => setTimeout(r, 1000))
      })
    }
  }
  const done = Promise.all(Array.from({ length: channels }, (_, i) => lane(i)))
  return { counts, done }
}

/**
 * Creates a QR channel named `name` and pairs it with the fake phone over the API's SSE stream;
 * its id once it is `connected`.
 */
export const pairQr = async (stack: Stack, wa: FakeWhatsApp, name: string): Promise<string> => {
  const auth = { token: stack.sessionToken, workspace: stack.workspaceId }
  const created = await call(stack.baseUrl, "POST", "/v1/channels", { ...auth, body: { provider: "qr", name } })
  if (created.status !== 201) throw new Error(`qr channel: ${created.text}`)
  const id = created.body.id as string
  const stream = await openStream(`${stack.baseUrl}/v1/channels/${id}/qr/stream`, {
    authorization: `Bearer ${auth.token}`,
    "x-workspace-id": stack.workspaceId
  })
  try {
    const started = await call(stack.baseUrl, "POST", `/v1/channels/${id}/qr/start`, auth)
    if (started.status !== 200) throw new Error(`qr/start ${started.status}`)
    await until("a QR code", () => stream.frames.some((f) => f.event === "qr.updated"))
    await Effect.runPromise(wa.phone.scan(stream.frames.find((f) => f.event === "qr.updated")!.data.qr as string))
    await until(
      "connected",
      async () => (await call(stack.baseUrl, "GET", `/v1/channels/${id}`, auth)).body?.status === "connected",
      60_000
    )
    return id
  } finally {
    stream.close()
  }
}
