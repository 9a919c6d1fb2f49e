export * as Entities from "./Entities.js"
