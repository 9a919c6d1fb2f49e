/**
 * Which provider serves a channel. The Channel entity asks here, so adding the QR provider is
 * one more entry, not a change to the entity.
 */
import type { Provider } from "@switchboard/domain"
import { Context, Effect, Layer, Option } from "effect"
import type { ChannelProvider } from "./ChannelProvider.js"
import { SandboxProvider } from "./SandboxProvider.js"

export class ChannelProviders extends Context.Tag("@switchboard/providers/ChannelProviders")<ChannelProviders, {
  /** `None` when this deployment has no adapter for the provider (`cloud`) */
  readonly get: (provider: Provider) => Option.Option<ChannelProvider>
}>() {}

/** Builds the registry from the adapters given. */
export const make = (adapters: Partial<Record<Provider, ChannelProvider>>): Context.Tag.Service<ChannelProviders> => ({
  get: (provider) => Option.fromNullable(adapters[provider])
})

/** The adapters of this deployment: sandbox (the QR provider joins here). */
export const layer = Layer.effect(
  ChannelProviders,
  Effect.map(SandboxProvider, (sandbox) => make({ sandbox }))
)
