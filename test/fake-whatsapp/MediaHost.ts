/**
 * The fake WhatsApp's media host: HTTPS on 127.0.0.1 (certificate from `MediaTls`), as WhatsApp's
 * `mmg.whatsapp.net` hosts behave for Baileys.
 *
 * - `POST /mms/<kind>/<token>?auth=..` (Baileys' upload through `node:https`): stores the
 *   encrypted body and answers `{url, direct_path}`.
 * - `GET <directPath>` (Baileys' download through `fetch`): the encrypted bytes; 404 for an
 *   unknown path, 410 for one made to expire (`expire`), as WhatsApp answers when a media is gone
 *   from the host and the phone must upload it again.
 * - `publish`: what a contact's phone does before sending a media: encrypts the file with Baileys'
 *   own `encryptedStream` and stores it, so Baileys' real download and decryption run on it.
 */
import { encryptedStream, type MediaType } from "baileys"
import { randomBytes } from "node:crypto"
import { once } from "node:events"
import { readFile, rm } from "node:fs/promises"
import type { ServerResponse } from "node:http"
import { createServer, type Server } from "node:https"
import type { AddressInfo } from "node:net"
import { HOST_CERT_PEM, HOST_KEY_PEM } from "./MediaTls.js"

/** What a message needs to point at a published media. */
export interface PublishedMedia {
  readonly url: string
  readonly directPath: string
  readonly mediaKey: Buffer
  readonly fileSha256: Buffer
  readonly fileEncSha256: Buffer
  readonly fileLength: number
}

export interface Upload {
  readonly kind: string
  readonly directPath: string
  readonly bytes: Buffer
}

export class MediaHost {
  /** what Baileys uploaded, in order */
  readonly uploads: Array<Upload> = []
  /** every GET, by path (status 0: held, see `holdDownloads`) */
  readonly downloads: Array<{ readonly path: string; readonly status: number }> = []
  private readonly files = new Map<string, Buffer>()
  private readonly gone = new Set<string>()
  /** downloads waiting for `releaseDownloads` */
  private held: Array<() => void> | undefined

  private constructor(private readonly server: Server) {
    server.on("request", (req, res) => {
      const url = new URL(req.url ?? "/", "https://127.0.0.1")
      if (req.method === "POST" && url.pathname.startsWith("/mms/")) {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const kind = url.pathname.split("/")[2] ?? "unknown"
          const directPath = this.store(Buffer.concat(chunks))
          this.uploads.push({ kind, directPath, bytes: this.files.get(directPath)! })
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify({ url: this.urlOf(directPath), direct_path: directPath }))
        })
        return
      }
      if (req.method === "GET" && this.held) {
        this.downloads.push({ path: url.pathname, status: 0 })
        this.held.push(() => this.answerGet(url.pathname, res))
        return
      }
      if (req.method === "GET") return this.answerGet(url.pathname, res)
      res.writeHead(405)
      res.end()
    })
  }

  private answerGet(path: string, res: ServerResponse) {
    if (res.destroyed || res.writableEnded) return
    const file = this.files.get(path)
    const status = this.gone.has(path) ? 410 : file ? 200 : 404
    this.downloads.push({ path, status })
    if (status !== 200 || !file) {
      res.writeHead(status)
      res.end()
      return
    }
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.length) })
    res.end(file)
  }

  /** Downloads from now on wait (the request stays open, unanswered) until `releaseDownloads`. */
  holdDownloads(): void {
    this.held ??= []
  }

  /** Answers the held downloads (those whose client is still there); later ones are answered at once. */
  releaseDownloads(): void {
    const held = this.held ?? []
    this.held = undefined
    for (const release of held) release()
  }

  static async start(): Promise<MediaHost> {
    const server = createServer({ cert: HOST_CERT_PEM, key: HOST_KEY_PEM })
    server.listen(0, "127.0.0.1")
    await once(server, "listening")
    return new MediaHost(server)
  }

  /** `127.0.0.1:PORT`, as `<media_conn><host hostname>` names it */
  get hostname(): string {
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  urlOf(directPath: string): string {
    return `https://${this.hostname}${directPath}?ccb=11-4&oh=fake&oe=FFFFFFFF`
  }

  /** Stores encrypted bytes under a new direct path. */
  store(encrypted: Buffer): string {
    const directPath = `/v/t62.7118-24/${randomBytes(12).toString("hex")}.enc`
    this.files.set(directPath, encrypted)
    return directPath
  }

  /** Encrypts `bytes` as a phone does for a media of `type` and stores them. */
  async publish(bytes: Uint8Array, type: MediaType): Promise<PublishedMedia> {
    const encrypted = await encryptedStream(Buffer.from(bytes), type)
    try {
      const directPath = this.store(await readFile(encrypted.encFilePath))
      return {
        url: this.urlOf(directPath),
        directPath,
        mediaKey: encrypted.mediaKey,
        fileSha256: encrypted.fileSha256,
        fileEncSha256: encrypted.fileEncSha256,
        fileLength: encrypted.fileLength
      }
    } finally {
      await rm(encrypted.encFilePath, { force: true })
    }
  }

  /** The host answers 410 Gone for this path from now on (the media must be uploaded again). */
  expire(directPath: string): void {
    this.gone.add(directPath)
  }

  /** The phone uploads the same encrypted file again: a new direct path. */
  reupload(directPath: string): string | undefined {
    const file = this.files.get(directPath)
    return file ? this.store(file) : undefined
  }
}
