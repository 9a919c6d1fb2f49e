/**
 * Linking by pairing code, the primary device's side (the account's phone), as the fake WhatsApp
 * server plays it against the real Baileys companion (lib/Socket/socket.js `requestPairingCode`,
 * lib/Socket/messages-recv.js `link_code_companion_reg`). Written from the protocol as Baileys
 * implements the companion's side:
 *
 * 1. The companion sends `<iq xmlns=md type=set><link_code_companion_reg stage=companion_hello>`
 *    with its ephemeral X25519 public key wrapped with the code: `salt(32) | iv(16) |
 *    AES-256-CTR(pub)`, the key being PBKDF2-SHA256(code, salt, 2 << 16 iterations, 32 bytes).
 *    The server answers with a `link_code_pairing_ref`.
 * 2. The user types the code on the phone: the phone unwraps the companion's key with what was
 *    typed, makes its own ephemeral key pair and sends it wrapped the same way (new salt and iv) in
 *    a `link_code_companion_reg` notification with its identity public key and the ref.
 * 3. The companion answers `stage=companion_finish` with its identity key and a key bundle:
 *    `salt(32) | iv(12) | AES-256-GCM(companion identity pub | primary identity pub | random(32))`
 *    under HKDF-SHA256(X25519(ephemeral keys), salt, "link_code_pairing_key_bundle_encryption_key").
 *    A wrong code gives the two sides different ephemeral secrets, so the bundle does not open.
 * 4. Both sides derive the ADV secret: HKDF-SHA256(ephemeral secret | X25519(identity keys) |
 *    random, no salt, "adv_secret"), which signs the `pair-success` device identity as the QR's
 *    ADV secret does.
 */
import {
  aesDecryptGCM,
  type BinaryNode,
  Curve,
  getBinaryNodeChild,
  getBinaryNodeChildBuffer,
  hkdf,
  type KeyPair
} from "baileys"
import { createCipheriv, pbkdf2Sync, randomBytes } from "node:crypto"

const PBKDF2_ITERATIONS = 2 << 16
const BUNDLE_INFO = "link_code_pairing_key_bundle_encryption_key"
const ADV_INFO = "adv_secret"

/** The key a code wraps ephemeral keys with (PBKDF2-SHA256, 32 bytes). */
const codeKey = (code: string, salt: Uint8Array): Buffer => pbkdf2Sync(code, salt, PBKDF2_ITERATIONS, 32, "sha256")

const ctr = (data: Uint8Array, key: Uint8Array, iv: Uint8Array): Buffer => {
  const cipher = createCipheriv("aes-256-ctr", key, iv)
  return Buffer.concat([cipher.update(data), cipher.final()])
}

/** `salt | iv | AES-CTR(pub)` under the code's key. */
export const wrapWithCode = (code: string, pub: Uint8Array): Buffer => {
  const salt = randomBytes(32)
  const iv = randomBytes(16)
  return Buffer.concat([salt, iv, ctr(pub, codeKey(code, salt), iv)])
}

/** The public key inside `salt | iv | AES-CTR(pub)`, as the code typed opens it (a wrong code opens garbage). */
export const unwrapWithCode = (code: string, wrapped: Uint8Array): Buffer => {
  const bytes = Buffer.from(wrapped)
  if (bytes.length !== 80) throw new Error(`wrapped ephemeral key of ${bytes.length} bytes, expected 80`)
  return ctr(bytes.subarray(48, 80), codeKey(code, bytes.subarray(0, 32)), bytes.subarray(32, 48))
}

/** What the companion's `companion_hello` told the server. */
export interface CompanionHello {
  /** the number the companion wants to link, digits (`jid` without the server) */
  readonly user: string
  readonly wrappedEphemeral: Buffer
  /** the companion's Noise static key (`companion_server_auth_key_pub`) */
  readonly noiseKey: Buffer
  /** `companion_platform_display`, e.g. `Chrome (Mac OS)` */
  readonly platformDisplay: string
  /** the server's ref for this pairing */
  readonly ref: Buffer
}

export const readHello = (iq: BinaryNode): CompanionHello => {
  const reg = getBinaryNodeChild(iq, "link_code_companion_reg")
  const wrapped = getBinaryNodeChildBuffer(reg, "link_code_pairing_wrapped_companion_ephemeral_pub")
  const noise = getBinaryNodeChildBuffer(reg, "companion_server_auth_key_pub")
  if (!reg || !wrapped || !noise) throw new Error("companion_hello without its keys")
  return {
    user: (reg.attrs["jid"] ?? "").split("@")[0]!.split(":")[0]!,
    wrappedEphemeral: Buffer.from(wrapped),
    noiseKey: Buffer.from(noise),
    platformDisplay: Buffer.from(getBinaryNodeChildBuffer(reg, "companion_platform_display") ?? []).toString(),
    ref: randomBytes(32)
  }
}

/** The phone's half of one attempt: what it sends after the user typed `typed`, and the keys to finish. */
export const primaryAnswer = (hello: CompanionHello, typed: string, identity: KeyPair) => {
  const companionEphemeral = unwrapWithCode(typed, hello.wrappedEphemeral)
  const ephemeral = Curve.generateKeyPair()
  const notification: BinaryNode = {
    tag: "notification",
    attrs: { from: "s.whatsapp.net", type: "link_code_companion_reg", id: randomBytes(8).toString("hex") },
    content: [{
      tag: "link_code_companion_reg",
      attrs: {},
      content: [
        { tag: "link_code_pairing_ref", attrs: {}, content: hello.ref },
        { tag: "primary_identity_pub", attrs: {}, content: identity.public },
        {
          tag: "link_code_pairing_wrapped_primary_ephemeral_pub",
          attrs: {},
          content: wrapWithCode(typed, ephemeral.public)
        }
      ]
    }]
  }
  return { notification, ephemeralSecret: Curve.sharedKey(ephemeral.private, companionEphemeral) }
}

/**
 * Opens the companion's `companion_finish`: its identity key and the ADV secret, or why it does
 * not open (a wrong code, a bundle naming other keys, another pairing's ref).
 */
export const openFinish = (
  finish: BinaryNode,
  expected: {
    readonly ref: Buffer
    readonly ephemeralSecret: Buffer
    readonly identity: KeyPair
    /** the identity key the companion registered with (its Noise handshake) */
    readonly companionIdentity: Buffer
  }
): { readonly ok: true; readonly advSecret: Buffer } | { readonly ok: false; readonly reason: string } => {
  const reg = getBinaryNodeChild(finish, "link_code_companion_reg")
  const bundle = getBinaryNodeChildBuffer(reg, "link_code_pairing_wrapped_key_bundle")
  const companionIdentity = getBinaryNodeChildBuffer(reg, "companion_identity_public")
  const ref = getBinaryNodeChildBuffer(reg, "link_code_pairing_ref")
  if (!bundle || !companionIdentity || !ref) return { ok: false, reason: "companion_finish without its parts" }
  if (!Buffer.from(ref).equals(expected.ref)) return { ok: false, reason: "another pairing's ref" }
  const bytes = Buffer.from(bundle)
  const key = Buffer.from(hkdf(expected.ephemeralSecret, 32, { salt: bytes.subarray(0, 32), info: BUNDLE_INFO }))
  let payload: Buffer
  try {
    payload = aesDecryptGCM(bytes.subarray(44), key, bytes.subarray(32, 44), Buffer.alloc(0))
  } catch {
    return { ok: false, reason: "the key bundle does not open (wrong code)" }
  }
  if (payload.length !== 96) return { ok: false, reason: "key bundle of the wrong size" }
  const companion = payload.subarray(0, 32)
  if (!companion.equals(Buffer.from(companionIdentity)) || !companion.equals(expected.companionIdentity)) {
    return { ok: false, reason: "key bundle names another companion identity" }
  }
  if (!payload.subarray(32, 64).equals(Buffer.from(expected.identity.public))) {
    return { ok: false, reason: "key bundle names another primary identity" }
  }
  const identitySecret = Curve.sharedKey(expected.identity.private, companion)
  const advSecret = Buffer.from(
    hkdf(Buffer.concat([expected.ephemeralSecret, identitySecret, payload.subarray(64, 96)]), 32, { info: ADV_INFO })
  )
  return { ok: true, advSecret }
}
