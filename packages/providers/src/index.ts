export * from "./ChannelProvider.js"
export * as ProvidersConfig from "./ProvidersConfig.js"
export * from "./SandboxProvider.js"
