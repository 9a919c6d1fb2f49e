/**
 * The server side of WhatsApp's Noise_XX_25519_AESGCM_SHA256 handshake, mirroring Baileys'
 * initiator (`node_modules/baileys/lib/Utils/noise-handler.js`) step by step, plus the fake
 * certificate authority whose root the test process pins with `useFakeWhatsAppRoot`.
 *
 * Baileys' own primitives (Curve, AES-GCM, the binary node codec) keep both sides byte-compatible.
 */
import {
  aesDecryptGCM,
  aesEncryptGCM,
  type BinaryNode,
  Curve,
  decodeBinaryNode,
  encodeBinaryNode,
  type KeyPair,
  NOISE_MODE,
  NOISE_WA_HEADER,
  proto
} from "baileys"
import { createHash, hkdfSync } from "node:crypto"

const sha256 = (data: Uint8Array): Buffer => createHash("sha256").update(data).digest()

const ivFor = (counter: number): Buffer => {
  const iv = Buffer.alloc(12)
  iv.writeUInt32BE(counter, 8)
  return iv
}

const hkdf64 = (ikm: Uint8Array, salt: Uint8Array): Buffer =>
  Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.alloc(0), 64))

/**
 * A fake root -> intermediate -> leaf chain. Baileys >= 7.0.0-rc10 checks the intermediate's
 * signature against the pinned `WA_CERT_DETAILS.PUBLIC_KEY` and the leaf's against the
 * intermediate key, so tests pin `root.public`.
 */
export class FakeCertificateAuthority {
  readonly root: KeyPair = Curve.generateKeyPair()
  private readonly intermediate: KeyPair = Curve.generateKeyPair()
  private readonly now = Math.floor(Date.now() / 1000)
  private readonly intermediateDetails = proto.CertChain.NoiseCertificate.Details.encode({
    serial: 1,
    issuerSerial: 0,
    key: this.intermediate.public,
    notBefore: this.now - 3600,
    notAfter: this.now + 86400 * 365
  }).finish()

  /** The `CertChain` the server sends (encrypted) in its hello, for its static key. */
  chainFor(serverStaticPublic: Uint8Array): Uint8Array {
    const leafDetails = proto.CertChain.NoiseCertificate.Details.encode({
      serial: 2,
      issuerSerial: 1,
      key: serverStaticPublic,
      notBefore: this.now - 3600,
      notAfter: this.now + 86400 * 30
    }).finish()
    return proto.CertChain.encode({
      leaf: { details: leafDetails, signature: Buffer.from(Curve.sign(this.intermediate.private, leafDetails)) },
      intermediate: {
        details: this.intermediateDetails,
        signature: Buffer.from(Curve.sign(this.root.private, this.intermediateDetails))
      }
    }).finish()
  }
}

interface Transport {
  readonly decKey: Buffer
  readonly encKey: Buffer
  readCounter: number
  writeCounter: number
}

/** Per-connection handshake and transport state. */
export class NoiseResponder {
  private h: Buffer
  private ck: Buffer
  private k: Buffer
  private counter = 0
  private pending = Buffer.alloc(0)
  private gotIntro = false
  private ephemeral: KeyPair | undefined
  private clientEphemeral: Buffer | undefined
  private transport: Transport | undefined
  /** The client's Noise static key (= `creds.noiseKey.public`), known after `onClientFinish`. */
  clientStatic: Buffer = Buffer.alloc(0)

  constructor(private readonly staticKey: KeyPair, private readonly certChain: Uint8Array) {
    const mode = Buffer.from(NOISE_MODE)
    // 32 bytes long, so used as-is (noise-handler.js)
    this.h = mode.length === 32 ? mode : sha256(mode)
    this.ck = this.h
    this.k = this.h
  }

  private mixHash(data: Uint8Array) {
    this.h = sha256(Buffer.concat([this.h, data]))
  }

  private mixKey(ikm: Uint8Array) {
    const out = hkdf64(ikm, this.ck)
    this.ck = out.subarray(0, 32)
    this.k = out.subarray(32)
    this.counter = 0
  }

  private encryptHandshake(plaintext: Uint8Array): Buffer {
    const ct = aesEncryptGCM(plaintext, this.k, ivFor(this.counter++), this.h)
    this.mixHash(ct)
    return ct
  }

  private decryptHandshake(ciphertext: Uint8Array): Buffer {
    const pt = aesDecryptGCM(ciphertext, this.k, ivFor(this.counter++), this.h)
    this.mixHash(ciphertext)
    return pt
  }

  /** Feeds raw WebSocket bytes; returns every complete frame. */
  push(data: Buffer): Array<Buffer> {
    this.pending = Buffer.concat([this.pending, data])
    if (!this.gotIntro) {
      if (this.pending.length < 4) return []
      // optional routing prefix: 'ED' 0 1 <u24 length> <routingInfo>, then the 'WA' header
      if (this.pending[0] === 0x45 && this.pending[1] === 0x44) {
        if (this.pending.length < 7) return []
        const length = this.pending.readUIntBE(4, 3)
        if (this.pending.length < 7 + length + 4) return []
        this.pending = this.pending.subarray(7 + length)
      }
      const header = this.pending.subarray(0, 4)
      if (!header.equals(NOISE_WA_HEADER)) throw new Error(`bad intro header ${header.toString("hex")}`)
      this.mixHash(NOISE_WA_HEADER)
      this.pending = this.pending.subarray(4)
      this.gotIntro = true
    }
    const frames: Array<Buffer> = []
    while (this.pending.length >= 3) {
      const size = this.pending.readUIntBE(0, 3)
      if (this.pending.length < size + 3) break
      frames.push(Buffer.from(this.pending.subarray(3, size + 3)))
      this.pending = this.pending.subarray(size + 3)
    }
    return frames
  }

  private frame(payload: Uint8Array): Buffer {
    const out = Buffer.alloc(3 + payload.length)
    out.writeUIntBE(payload.length, 0, 3)
    out.set(payload, 3)
    return out
  }

  /** Message 1 (-> e) in; message 2 (<- e, ee, s, es, payload = certificate chain) out, framed. */
  onClientHello(frame: Buffer): Buffer {
    const { clientHello } = proto.HandshakeMessage.decode(frame)
    if (!clientHello?.ephemeral) throw new Error("client hello without an ephemeral key")
    this.clientEphemeral = Buffer.from(clientHello.ephemeral)
    this.mixHash(this.clientEphemeral)
    this.ephemeral = Curve.generateKeyPair()
    this.mixHash(this.ephemeral.public)
    this.mixKey(Curve.sharedKey(this.ephemeral.private, this.clientEphemeral)) // ee
    const encryptedStatic = this.encryptHandshake(this.staticKey.public)
    this.mixKey(Curve.sharedKey(this.staticKey.private, this.clientEphemeral)) // es
    const encryptedPayload = this.encryptHandshake(this.certChain)
    return this.frame(
      proto.HandshakeMessage.encode({
        serverHello: { ephemeral: this.ephemeral.public, static: encryptedStatic, payload: encryptedPayload }
      }).finish()
    )
  }

  /** Message 3 (-> s, se, payload = ClientPayload) in; switches to transport mode. */
  onClientFinish(frame: Buffer): proto.ClientPayload {
    const { clientFinish } = proto.HandshakeMessage.decode(frame)
    if (!clientFinish?.static || !clientFinish.payload || !this.ephemeral) throw new Error("bad client finish")
    this.clientStatic = this.decryptHandshake(clientFinish.static)
    this.mixKey(Curve.sharedKey(this.ephemeral.private, this.clientStatic)) // se
    const payload = proto.ClientPayload.decode(this.decryptHandshake(clientFinish.payload))
    const keys = hkdf64(Buffer.alloc(0), this.ck)
    // the client encrypts with the first half: we decrypt with it
    this.transport = { decKey: keys.subarray(0, 32), encKey: keys.subarray(32), readCounter: 0, writeCounter: 0 }
    return payload
  }

  decode(frame: Buffer): Promise<BinaryNode> {
    const t = this.transportOrThrow()
    return decodeBinaryNode(aesDecryptGCM(frame, t.decKey, ivFor(t.readCounter++), Buffer.alloc(0)))
  }

  encode(node: BinaryNode): Buffer {
    const t = this.transportOrThrow()
    return this.frame(aesEncryptGCM(encodeBinaryNode(node), t.encKey, ivFor(t.writeCounter++), Buffer.alloc(0)))
  }

  private transportOrThrow(): Transport {
    if (!this.transport) throw new Error("handshake not finished")
    return this.transport
  }
}
