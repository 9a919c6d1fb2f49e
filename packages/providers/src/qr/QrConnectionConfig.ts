/**
 * Settings of QR (Baileys) connections: where WhatsApp is, timeouts, the reconnect budget, how
 * much of Baileys' own logging reaches our logs and the key that seals the link at rest. Read from
 * the environment with defaults; tests override with `layer({...})` (a fake server's URL, short
 * timeouts).
 */
import { SecretsConfig } from "@switchboard/infra"
import { Config, Context, Duration, Effect, Layer, Option } from "effect"

export type BaileysLogLevel = "silent" | "error" | "warn" | "info" | "debug" | "trace"

/** A WhatsApp Web version, `2.3000.1043857760` as `[2, 3000, 1043857760]`. */
export type WhatsAppWebVersion = readonly [number, number, number]

/** `2.3000.1043857760` -> `[2, 3000, 1043857760]`; anything else -> `undefined`. */
export const parseWhatsAppWebVersion = (text: string): WhatsAppWebVersion | undefined => {
  const match = /^(\d{1,4})\.(\d{1,6})\.(\d{1,12})$/.exec(text.trim())
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined
}

export class QrConnectionConfig extends Context.Tag("@switchboard/providers/QrConnectionConfig")<QrConnectionConfig, {
  /** WhatsApp's WebSocket edge (`ws://` is accepted, for the fake server) */
  readonly websocketUrl: string
  /** gives up a connection attempt that has not opened in this time (Baileys: close 408) */
  readonly connectTimeout: Duration.Duration
  /** gives up a query (IQ) after this time */
  readonly queryTimeout: Duration.Duration
  /** ping interval; no frame for this + 5 s closes the link (408) */
  readonly keepAliveInterval: Duration.Duration
  /** lifetime of each QR code; `None` = Baileys' own (60 s for the first, 20 s for the next) */
  readonly qrTimeout: Option.Option<Duration.Duration>
  /** first reconnect delay after a transient close; doubles each attempt, with jitter */
  readonly reconnectBaseDelay: Duration.Duration
  /** ceiling of the reconnect delay */
  readonly reconnectMaxDelay: Duration.Duration
  /** reconnects in a row without reaching `open` before the channel is given up (`disconnected`) */
  readonly reconnectMaxAttempts: number
  /**
   * after `qr/start`, until a link first opens: attempts in a row that cannot reach WhatsApp
   * (DNS, refused, timeout, TLS) before the channel is given up (`disconnected`), instead of the
   * whole reconnect budget
   */
  readonly connectMaxFailures: number
  /** how much of Baileys' log reaches ours (always scrubbed of QR material) */
  readonly baileysLogLevel: BaileysLogLevel
  /**
   * the WhatsApp Web version the link announces (`[2, 3000, 1043857760]`); `None` = the one
   * Baileys ships. WhatsApp refuses a version it considers outdated (close 405: the channel is
   * `disconnected` with `client_outdated`); set a current one and restart (docs/QR-CHANNELS.md)
   */
  readonly whatsappWebVersion: Option.Option<WhatsAppWebVersion>
  /** "typing..." before a conversation's first message after a pause (`QrTyping`) */
  readonly typingIndicator: boolean
  /**
   * `SECRETS_ENCRYPTION_KEY` (+ `SECRETS_ENCRYPTION_KEY_PREVIOUS`; `SecretsConfig`, shared with
   * webhook secrets): seals every value of the channel's auth state in Postgres (`QrAuthState`)
   */
  readonly keyring: SecretsConfig.Keyring
}>() {}

export const defaults: Context.Tag.Service<QrConnectionConfig> = {
  websocketUrl: "wss://web.whatsapp.com/ws/chat",
  connectTimeout: Duration.seconds(20),
  queryTimeout: Duration.seconds(60),
  keepAliveInterval: Duration.seconds(30),
  qrTimeout: Option.none(),
  reconnectBaseDelay: Duration.seconds(1),
  reconnectMaxDelay: Duration.minutes(1),
  reconnectMaxAttempts: 10,
  connectMaxFailures: 3,
  baileysLogLevel: "warn",
  whatsappWebVersion: Option.none(),
  typingIndicator: true,
  keyring: SecretsConfig.developmentKeyring
}

export const config: Config.Config<Context.Tag.Service<QrConnectionConfig>> = Config.all({
  websocketUrl: Config.string("QR_WEBSOCKET_URL").pipe(
    Config.withDefault(defaults.websocketUrl),
    Config.withDescription("WhatsApp's WebSocket endpoint")
  ),
  connectTimeout: Config.duration("QR_CONNECT_TIMEOUT").pipe(
    Config.withDefault(defaults.connectTimeout),
    Config.withDescription("Time for a connection attempt to open")
  ),
  queryTimeout: Config.duration("QR_QUERY_TIMEOUT").pipe(
    Config.withDefault(defaults.queryTimeout),
    Config.withDescription("Time for a WhatsApp query to be answered")
  ),
  keepAliveInterval: Config.duration("QR_KEEP_ALIVE_INTERVAL").pipe(
    Config.withDefault(defaults.keepAliveInterval),
    Config.withDescription("Ping interval of a QR connection")
  ),
  qrTimeout: Config.option(Config.duration("QR_CODE_TIMEOUT")).pipe(
    Config.withDescription("Lifetime of each QR code (default: 60 s for the first, 20 s for the next)")
  ),
  reconnectBaseDelay: Config.duration("QR_RECONNECT_BASE_DELAY").pipe(
    Config.withDefault(defaults.reconnectBaseDelay),
    Config.withDescription("First reconnect delay after a transient close")
  ),
  reconnectMaxDelay: Config.duration("QR_RECONNECT_MAX_DELAY").pipe(
    Config.withDefault(defaults.reconnectMaxDelay),
    Config.withDescription("Largest reconnect delay")
  ),
  reconnectMaxAttempts: Config.integer("QR_RECONNECT_MAX_ATTEMPTS").pipe(
    Config.withDefault(defaults.reconnectMaxAttempts),
    Config.validate({ message: "Expected a positive integer", validation: (n) => n > 0 }),
    Config.withDescription("Reconnects in a row without success before a QR channel is disconnected")
  ),
  connectMaxFailures: Config.integer("QR_CONNECT_MAX_FAILURES").pipe(
    Config.withDefault(defaults.connectMaxFailures),
    Config.validate({ message: "Expected a positive integer", validation: (n) => n > 0 }),
    Config.withDescription("Failed attempts to reach WhatsApp after qr/start before a QR channel is disconnected")
  ),
  baileysLogLevel: Config.literal("silent", "error", "warn", "info", "debug", "trace")("QR_BAILEYS_LOG_LEVEL").pipe(
    Config.withDefault(defaults.baileysLogLevel),
    Config.withDescription("How much of Baileys' own log is forwarded (scrubbed of QR material)")
  ),
  whatsappWebVersion: Config.option(
    Config.string("QR_WHATSAPP_WEB_VERSION").pipe(
      Config.validate({
        message: "Expected a WhatsApp Web version such as 2.3000.1043857760",
        validation: (text) => parseWhatsAppWebVersion(text) !== undefined
      }),
      Config.map((text) => parseWhatsAppWebVersion(text)!)
    )
  ).pipe(
    Config.withDescription("WhatsApp Web version QR links announce (default: the one Baileys ships)")
  ),
  typingIndicator: Config.boolean("QR_TYPING_INDICATOR").pipe(
    Config.withDefault(defaults.typingIndicator),
    Config.withDescription("Show 'typing...' before a conversation's first message after a pause")
  ),
  keyring: SecretsConfig.keyring
})

/** The development key is warned about once at start (`StartupSafety`), not here. */
export const layerFromEnv: Layer.Layer<QrConnectionConfig> = Layer.effect(QrConnectionConfig, config).pipe(
  Layer.orDie
)

/** The environment's settings with `options` on top. */
export const layer = (options: Partial<Context.Tag.Service<QrConnectionConfig>>): Layer.Layer<QrConnectionConfig> =>
  Layer.effect(QrConnectionConfig, Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options }))).pipe(Layer.orDie)
