/**
 * What a process that hosts no provider connection (the api node) may use from this package:
 * configuration, the sandbox's magic numbers, the QR pairing frames' schemas and the QR auth-state
 * repository (re-sealing secrets). Nothing here loads Baileys or a provider adapter; the api node's
 * module graph check (test/apiModuleGraph.test.ts) holds it to that.
 */
export * as ProvidersConfig from "./ProvidersConfig.js"
export * as QrAuthStateRepo from "./qr/QrAuthStateRepo.js"
export * as QrConnectionEvent from "./qr/QrConnectionEvent.js"
export * as SandboxNumbers from "./SandboxNumbers.js"
