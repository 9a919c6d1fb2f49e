/**
 * TEST ONLY: the throwaway TLS identity of the fake WhatsApp media host (`MediaHost`). A CA made
 * for these tests alone (its private key was discarded after signing, so it cannot vouch for
 * anything else) and a certificate for 127.0.0.1 / localhost signed by it, valid until 2126.
 *
 * Baileys reaches media hosts over HTTPS (`node:https` to upload, `fetch` to download), so
 * the processes under test must trust this CA: `NODE_EXTRA_CA_CERTS` names a bundle of the
 * system CAs plus `CA_PEM`, set before the process starts (`test/support/globalSetup.ts` for
 * test workers, the environment of spawned service processes). Made with:
 *
 * ```sh
 * openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem \
 *   -days 36500 -subj "/CN=Switchboard fake WhatsApp media test CA" \
 *   -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
 * openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout host.key -out host.csr -subj "/CN=127.0.0.1"
 * openssl x509 -req -in host.csr -CA ca.pem -CAkey ca.key -out host.pem -days 36500 \
 *   -extfile <(printf "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
 * rm ca.key
 * ```
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

export const CA_PEM = `-----BEGIN CERTIFICATE-----
MIIByzCCAXGgAwIBAgIUGGBanmRSVkK9gACp+qfXJcE1MhowCgYIKoZIzj0EAwIw
MjEwMC4GA1UEAwwnU3dpdGNoYm9hcmQgZmFrZSBXaGF0c0FwcCBtZWRpYSB0ZXN0
IENBMCAXDTI2MTEyNjEyMjczNVoYDzIxMjYxMTAyMTIyNzM1WjAyMTAwLgYDVQQD
DCdTd2l0Y2hib2FyZCBmYWtlIFdoYXRzQXBwIG1lZGlhIHRlc3QgQ0EwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAARcPzxdD6o6dQGKzHRMLwh1RCmkME3VBQv3eQy7
YQtJsbdVkVP8gGmutKv2WFjys4H1VGW1tNymdkFBAwMsnVxto2MwYTAdBgNVHQ4E
FgQUygk5Un05hNzHL9BTd0SafGXyURUwHwYDVR0jBBgwFoAUygk5Un05hNzHL9BT
d0SafGXyURUwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZI
zj0EAwIDSAAwRQIhAKmqoxxX/w+sJsGm93So6mAdaH4Z6OaVblrQEUguRnC4AiBq
bhniXsg/2QhIIw89aTEH6CL6LmVDP9XbqbG7mSym2w==
-----END CERTIFICATE-----
`

export const HOST_CERT_PEM = `-----BEGIN CERTIFICATE-----
MIIB2DCCAX2gAwIBAgIUTQ2E2gtGeqIyQ0kMGtxhTvFjZckwCgYIKoZIzj0EAwIw
MjEwMC4GA1UEAwwnU3dpdGNoYm9hcmQgZmFrZSBXaGF0c0FwcCBtZWRpYSB0ZXN0
IENBMCAXDTI2MTEyNjEyMjczNloYDzIxMjYxMTAyMTIyNzM2WjAUMRIwEAYDVQQD
DAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAStoIPH1x/r5p/v
H3lu8KggO1yoj+Yhwf+R3iDmxBWTLCQ8sgg9Ev7yI32EiLKGXUV+l/bUrKn/LAHL
pvkw+og/o4GMMIGJMBoGA1UdEQQTMBGHBH8AAAGCCWxvY2FsaG9zdDAJBgNVHRME
AjAAMAsGA1UdDwQEAwIHgDATBgNVHSUEDDAKBggrBgEFBQcDATAdBgNVHQ4EFgQU
w48XpBldXOFNrA7iBQxCKte3P6YwHwYDVR0jBBgwFoAUygk5Un05hNzHL9BTd0Sa
fGXyURUwCgYIKoZIzj0EAwIDSQAwRgIhAIvYzdoMFYCAnxOA1yADwPp7WL3FAhwE
+Sm42PFTCRFlAiEAp/TEMP5uwS/6/5icc/k4f+Wz3j2YxSXgcznzD+CX4dQ=
-----END CERTIFICATE-----
`

export const HOST_KEY_PEM = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgl5V4mZn/Z1i3HNjB
If3tbbPa7fVjaAb4tluQ/CX8gLahRANCAAStoIPH1x/r5p/vH3lu8KggO1yoj+Yh
wf+R3iDmxBWTLCQ8sgg9Ev7yI32EiLKGXUV+l/bUrKn/LAHLpvkw+og/
-----END PRIVATE KEY-----
`

/**
 * Writes a CA bundle that extends what this process trusts (the file already named by
 * `NODE_EXTRA_CA_CERTS`, else the system bundle) with `CA_PEM`; returns its path. Idempotent.
 */
export const writeTrustBundle = (directory: string): string => {
  const path = join(directory, "fake-whatsapp-media-ca.pem")
  const current = process.env["NODE_EXTRA_CA_CERTS"]
  if (current === path) return path
  const system = [current, "/etc/ssl/certs/ca-certificates.crt"].find((p) => p !== undefined && existsSync(p))
  mkdirSync(directory, { recursive: true })
  writeFileSync(path, `${system ? readFileSync(system, "utf8").trimEnd() + "\n" : ""}${CA_PEM}`)
  return path
}
