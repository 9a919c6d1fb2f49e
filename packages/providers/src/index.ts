export * from "./qr/index.js"
