import { assert, describe, it } from "@effect/vitest"
import * as PublicUrl from "../src/PublicUrl.js"

const tcp = (hostname: string, port: number) => ({ _tag: "TcpAddress", hostname, port }) as const

describe("the public URL of links", () => {
  it("is PUBLIC_URL when set, without a trailing slash", () => {
    assert.strictEqual(
      PublicUrl.of({ publicUrl: "https://api.example.com/sb/", address: tcp("0.0.0.0", 8080), basePath: "/api" }),
      "https://api.example.com/sb"
    )
  })

  it("is the listening address with the base path otherwise, a wildcard shown as localhost", () => {
    assert.strictEqual(
      PublicUrl.of({ publicUrl: undefined, address: tcp("::", 4321), basePath: "" }),
      "http://localhost:4321"
    )
    assert.strictEqual(
      PublicUrl.of({ publicUrl: "", address: tcp("127.0.0.1", 8080), basePath: "/api" }),
      "http://127.0.0.1:8080/api"
    )
    assert.strictEqual(PublicUrl.of({ publicUrl: undefined, address: tcp("::1", 80), basePath: "" }), "http://[::1]:80")
  })

  it("falls back to the default port where nothing listens (the operator CLI)", () => {
    assert.strictEqual(
      PublicUrl.of({ publicUrl: undefined, address: undefined, basePath: "" }),
      "http://localhost:3000"
    )
  })
})
