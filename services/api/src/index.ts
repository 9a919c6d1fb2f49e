export * as HttpConfig from "./HttpConfig.js"
export * as HttpServer from "./HttpServer.js"
export * from "./ShutdownSignal.js"
