export * from "./Api.js"
export * from "./HealthApi.js"
export * from "./Security.js"
