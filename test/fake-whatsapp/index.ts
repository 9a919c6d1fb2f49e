export * from "./FakeGroups.js"
export * from "./FakeWhatsApp.js"
