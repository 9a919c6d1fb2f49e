/**
 * A remote WhatsApp user's primary device (device 0) with a REAL libsignal identity, so what
 * Baileys sends can be decrypted and what the contact says can be encrypted to Baileys.
 */
import { type BinaryNode, proto, unpadRandomMax16, writeRandomPadMax16 } from "baileys"
import * as signal from "libsignal"

interface SignalKeyPair {
  readonly pubKey: Buffer
  readonly privKey: Buffer
}

/** The part of libsignal's `keyhelper` its bundled typings leave out. */
interface KeyHelper {
  generateIdentityKeyPair(): SignalKeyPair
  generateRegistrationId(): number
  generateSignedPreKey(
    identity: SignalKeyPair,
    keyId: number
  ): { keyId: number; keyPair: SignalKeyPair; signature: Buffer }
  generatePreKey(keyId: number): { keyId: number; keyPair: SignalKeyPair }
}

const keyhelper = (signal as unknown as { readonly keyhelper: KeyHelper }).keyhelper

const u24 = (n: number) => {
  const b = Buffer.alloc(3)
  b.writeUIntBE(n, 0, 3)
  return b
}
const u32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n, 0)
  return b
}
/** 0x05-prefixed (33 bytes) -> raw 32 bytes, as the wire carries them */
const raw = (key: Uint8Array) => Buffer.from(key).subarray(key.length === 33 ? 1 : 0)
/** raw 32 bytes -> 0x05-prefixed, as libsignal wants them */
const prefixed = (key: Uint8Array) => (key.length === 33 ? Buffer.from(key) : Buffer.concat([Buffer.from([5]), key]))

const childContent = (node: BinaryNode, tag: string): Buffer => {
  const child = Array.isArray(node.content) ? node.content.find((c) => c.tag === tag) : undefined
  if (!child || !(child.content instanceof Uint8Array)) throw new Error(`missing <${tag}>`)
  return Buffer.from(child.content)
}

/** What the server keeps about a linked companion (Baileys) to encrypt to it. */
export interface CompanionKeys {
  /** `<lid user>:<device>@lid` */
  readonly lid: string
  readonly device: number
  registrationId: number
  identityKey: Buffer
  signedPreKey: BinaryNode | undefined
  preKeys: Array<BinaryNode>
}

export class SignalPeer {
  private readonly identity = keyhelper.generateIdentityKeyPair()
  private readonly registrationId = keyhelper.generateRegistrationId()
  private readonly signedPreKey = keyhelper.generateSignedPreKey(this.identity, 1)
  private readonly preKeys = new Map<number, { keyId: number; keyPair: SignalKeyPair }>()
  private readonly sessions = new Map<string, signal.SessionRecord>()
  private nextPreKeyId = 1

  private readonly store: signal.SignalStorage = {
    isTrustedIdentity: () => true,
    loadSession: async (address) => this.sessions.get(address),
    storeSession: async (address, record) => {
      this.sessions.set(address, record)
    },
    loadPreKey: async (id) => this.preKeys.get(Number(id))?.keyPair,
    removePreKey: (id) => {
      this.preKeys.delete(Number(id))
    },
    loadSignedPreKey: () => this.signedPreKey.keyPair,
    getOurRegistrationId: () => this.registrationId,
    getOurIdentity: () => this.identity
  }

  /** Children of `<user>` in an `encrypt/get key` result (Baileys `parseAndInjectE2ESessions`). */
  bundle(): Array<BinaryNode> {
    const preKey = keyhelper.generatePreKey(this.nextPreKeyId++)
    this.preKeys.set(preKey.keyId, preKey)
    return [
      { tag: "registration", attrs: {}, content: u32(this.registrationId) },
      { tag: "type", attrs: {}, content: Buffer.from([5]) },
      { tag: "identity", attrs: {}, content: raw(this.identity.pubKey) },
      {
        tag: "skey",
        attrs: {},
        content: [
          { tag: "id", attrs: {}, content: u24(this.signedPreKey.keyId) },
          { tag: "value", attrs: {}, content: raw(this.signedPreKey.keyPair.pubKey) },
          { tag: "signature", attrs: {}, content: Buffer.from(this.signedPreKey.signature) }
        ]
      },
      {
        tag: "key",
        attrs: {},
        content: [
          { tag: "id", attrs: {}, content: u24(preKey.keyId) },
          { tag: "value", attrs: {}, content: raw(preKey.keyPair.pubKey) }
        ]
      }
    ]
  }

  /**
   * The children of a `retry` receipt the phone sends when it cannot decrypt a message, as the real
   * app does: its registration id and a fresh key bundle (Baileys builds a new session from it and
   * sends the message again, `sendMessagesAgain`).
   */
  retryReceiptContent(): Array<BinaryNode> {
    const [registration, ...keys] = this.bundle()
    return [registration!, { tag: "keys", attrs: {}, content: keys }]
  }

  private addressOf(companion: CompanionKeys) {
    const lidUser = companion.lid.split(":")[0]!.split("@")[0]!
    // Baileys addresses LID identities as `<user>_1` (the LID domain type)
    return new signal.ProtocolAddress(`${lidUser}_1`, companion.device)
  }

  /** Decrypts one `<enc>` that Baileys addressed to this peer. */
  async decrypt(companion: CompanionKeys, enc: BinaryNode): Promise<proto.Message> {
    if (!(enc.content instanceof Uint8Array)) throw new Error("empty <enc>")
    const cipher = new signal.SessionCipher(this.store, this.addressOf(companion))
    const plaintext = enc.attrs["type"] === "pkmsg"
      ? await cipher.decryptPreKeyWhisperMessage(enc.content)
      : await cipher.decryptWhisperMessage(enc.content)
    return proto.Message.decode(unpadRandomMax16(plaintext))
  }

  /** Drops the session with the companion: the next message starts a new one (pkmsg). */
  forget(companion: CompanionKeys): void {
    this.sessions.delete(this.addressOf(companion).toString())
  }

  /** Encrypts to the companion with one of the prekeys it uploaded after `<success>`. */
  async encrypt(
    companion: CompanionKeys,
    message: proto.IMessage
  ): Promise<{ type: "pkmsg" | "msg"; ciphertext: Buffer }> {
    const address = this.addressOf(companion)
    if (!this.sessions.has(address.toString())) {
      const preKey = companion.preKeys.shift()
      if (!preKey || !companion.signedPreKey) throw new Error("the companion uploaded no prekeys")
      await new signal.SessionBuilder(this.store, address).initOutgoing({
        registrationId: companion.registrationId,
        identityKey: prefixed(companion.identityKey),
        signedPreKey: {
          keyId: childContent(companion.signedPreKey, "id").readUIntBE(0, 3),
          publicKey: prefixed(childContent(companion.signedPreKey, "value")),
          signature: childContent(companion.signedPreKey, "signature")
        },
        preKey: {
          keyId: childContent(preKey, "id").readUIntBE(0, 3),
          publicKey: prefixed(childContent(preKey, "value"))
        }
      })
    }
    const { type, body } = await new signal.SessionCipher(this.store, address).encrypt(
      writeRandomPadMax16(proto.Message.encode(message).finish())
    )
    return { type: type === 3 ? "pkmsg" : "msg", ciphertext: Buffer.from(body, "binary") }
  }
}
