export * as Logging from "./Logging.js"
export * as Redis from "./Redis.js"
export * as SecretBox from "./SecretBox.js"
export * as SecretsConfig from "./SecretsConfig.js"
