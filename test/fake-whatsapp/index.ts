export * from "./FakeWhatsApp.js"
