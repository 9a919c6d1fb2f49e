export * from "./ChannelProvider.js"
export * as ChannelProviders from "./ChannelProviders.js"
export * as ProvidersConfig from "./ProvidersConfig.js"
export * from "./SandboxProvider.js"
