export * as Cluster from "./Cluster.js"
export * from "./ClusterSettings.js"
export * from "./ProbeEntity.js"
