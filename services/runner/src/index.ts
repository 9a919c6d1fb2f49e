export * as Entities from "./Entities.js"
export * as Health from "./Health.js"
