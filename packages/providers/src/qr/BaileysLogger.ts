/**
 * Baileys' logger (its `ILogger`, pino-shaped) forwarded into Effect's logging, scrubbed.
 *
 * QR material never reaches a log line: only the message and scalar fields of Baileys' log calls
 * are kept (never whole objects such as nodes or creds), and every forwarded string has QR links,
 * pairing refs and the channel's known secrets replaced.
 */
import type { SocketConfig } from "baileys"
import { Effect, LogLevel, Runtime } from "effect"
import type { BaileysLogLevel } from "./QrConnectionConfig.js"

type ILogger = SocketConfig["logger"]

const ORDER: Record<BaileysLogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, silent: 100 }
const EFFECT_LEVEL = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error
} as const

const QR_LINK = /https:\/\/wa\.me\/settings\/linked_devices#\S*/g
/** pairing refs: `2@` followed by base64 */
const QR_REF = /\b\d@[A-Za-z0-9+/]{16,}={0,2}/g
/** the same refs as Baileys prints binary node content: hex of `<digit>@<base64>` */
const QR_REF_HEX = /3[0-9]40(?:2b|2f|3[0-9]|3d|4[1-9a-f]|5[0-9a]|6[1-9a-f]|7[0-9a]){16,}/gi
const MAX_FIELD = 2000

/**
 * Replaces QR links, refs and each of `secrets` (and each comma-separated part of them, as text
 * or as hex) with placeholders.
 */
export const scrubQrMaterial = (text: string, secrets: Iterable<string> = []): string => {
  let out = text.replace(QR_LINK, "[qr]").replace(QR_REF, "[qr-ref]").replace(QR_REF_HEX, "[qr-ref]")
  for (const secret of secrets) {
    for (const part of [secret, ...secret.slice(secret.indexOf("#") + 1).split(",")]) {
      if (part.length < 8) continue
      // Baileys prints binary node content as hex (the pair-device refs in a trace)
      out = out.split(part).join("[redacted]").split(Buffer.from(part).toString("hex")).join("[redacted]")
    }
  }
  return out
}

const describe = (value: unknown): string | undefined => {
  if (typeof value === "string") return value
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value)
  if (value instanceof Error) return value.message
  if (value && typeof value === "object" && "message" in value && typeof value.message === "string") {
    return value.message
  }
  return undefined
}

/** The text of one Baileys log call: its message plus its scalar fields (objects are dropped). */
export const formatBaileysLog = (obj: unknown, msg: unknown): string => {
  const parts: Array<string> = []
  if (typeof obj === "string") {
    parts.push(obj)
    if (typeof msg === "string") parts.push(msg.slice(0, MAX_FIELD))
    return parts.join(" ")
  }
  if (typeof msg === "string") parts.push(msg)
  if (obj && typeof obj === "object") {
    for (const [key, value] of Object.entries(obj)) {
      const text = describe(value)
      if (text !== undefined) parts.push(`${key}=${text.slice(0, MAX_FIELD)}`)
    }
  }
  return parts.join(" ")
}

/**
 * A Baileys logger writing to the current Effect logger at `level` and above.
 * @param secrets read at each call: the QR codes issued so far and the creds' adv secret
 */
export const makeBaileysLogger = (options: {
  readonly level: BaileysLogLevel
  readonly runtime: Runtime.Runtime<never>
  readonly annotations: Record<string, string>
  readonly secrets: () => Iterable<string>
}): ILogger => {
  const minimum = ORDER[options.level]
  const write = (level: keyof typeof EFFECT_LEVEL) => (obj: unknown, msg?: string) => {
    if (ORDER[level] < minimum) return
    const text = scrubQrMaterial(formatBaileysLog(obj, msg), options.secrets())
    // logging is synchronous: the line is written before Baileys goes on
    Runtime.runSync(options.runtime)(
      Effect.logWithLevel(EFFECT_LEVEL[level], text).pipe(
        Effect.annotateLogs({ ...options.annotations, source: "baileys" })
      )
    )
  }
  const logger: ILogger = {
    level: options.level,
    child: () => logger,
    trace: write("trace"),
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error")
  }
  return logger
}
