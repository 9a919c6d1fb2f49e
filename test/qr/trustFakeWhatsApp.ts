/**
 * TEST SEAM, preloaded (`--import`) into service processes of end-to-end tests: makes the
 * process's Baileys trust the fake WhatsApp server's certificate root given in
 * `TEST_FAKE_WHATSAPP_ROOT` (base64), through the provider's one exported helper. Never loaded by
 * the services themselves.
 */
import { WhatsAppRoot } from "@switchboard/providers"

const root = process.env["TEST_FAKE_WHATSAPP_ROOT"]
if (root) WhatsAppRoot.useFakeWhatsAppRoot(Buffer.from(root, "base64"))
