/**
 * The entities as a cluster client sees them: their protocols and the cluster client layer. The
 * api node imports this subpath (`@switchboard/entities/protocol`), which loads no live handler,
 * provider adapter or Baileys (test/apiModuleGraph.test.ts checks it).
 */
export * as ChannelProtocol from "./ChannelProtocol.js"
export * as Cluster from "./Cluster.js"
export * as ClusterAuthConfig from "./ClusterAuthConfig.js"
export * as MessageProtocol from "./MessageProtocol.js"
export * as ProbeEntity from "./ProbeEntity.js"
export * as WebhookEndpointProtocol from "./WebhookEndpointProtocol.js"
