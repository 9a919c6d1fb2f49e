/**
 * Which provider serves a channel. The Channel entity asks here: a provider is one more entry,
 * not a change to the entity.
 */
import type { Messaging } from "@switchboard/domain"
import { Context, Effect, Layer, Option } from "effect"
import type { ChannelProvider } from "./ChannelProvider.js"
import * as QrChannelProvider from "./qr/QrChannelProvider.js"
import { SandboxProvider } from "./SandboxProvider.js"

export class ChannelProviders extends Context.Tag("@switchboard/providers/ChannelProviders")<ChannelProviders, {
  /** `None` when this deployment has no adapter for the provider (`cloud`) */
  readonly get: (provider: Messaging.Provider) => Option.Option<ChannelProvider>
}>() {}

/** Builds the registry from the adapters given. */
export const make = (
  adapters: Partial<Record<Messaging.Provider, ChannelProvider>>
): Context.Tag.Service<ChannelProviders> => ({
  get: (provider) => Option.fromNullable(adapters[provider])
})

/** The adapters of this deployment: sandbox and QR (Baileys). */
export const layer = Layer.effect(
  ChannelProviders,
  Effect.gen(function*() {
    const sandbox = yield* SandboxProvider
    const qr = yield* QrChannelProvider.make
    return make({ sandbox, qr })
  })
)
