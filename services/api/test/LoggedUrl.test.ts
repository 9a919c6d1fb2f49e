import { assert, describe, it } from "@effect/vitest"
import { LoggedUrl } from "@switchboard/service-api"

const MSG = "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"

describe("LoggedUrl", () => {
  it("keeps the contract's segments and well-formed ids", () => {
    assert.strictEqual(LoggedUrl.masked(`/v1/messages/${MSG}/read`), `/v1/messages/${MSG}/read`)
    assert.strictEqual(LoggedUrl.masked("/openapi.json"), "/openapi.json")
  })

  it("masks any other segment, on a route or not", () => {
    assert.strictEqual(LoggedUrl.masked("/v1/contacts/+4915112345678"), "/v1/contacts/*")
    assert.strictEqual(LoggedUrl.masked("/v1/4915112345678/x"), "/v1/*/*")
    assert.strictEqual(LoggedUrl.masked("/v1/contact-groups/grp_1;x=1/members"), "/v1/contact-groups/*/members")
  })

  it("keeps declared parameter names only, never a value", () => {
    assert.strictEqual(LoggedUrl.masked("/v1/contacts?q=%2B49151&limit=5"), "/v1/contacts?q=*&limit=*")
    assert.strictEqual(LoggedUrl.masked("/v1/contacts?%2B4915112345678=1&4915112345678"), "/v1/contacts?*=*&*=*")
  })

  it("keeps the operator's base path", () => {
    assert.strictEqual(LoggedUrl.masked("/api/v1/contacts/x?q=1", "/api"), "/api/v1/contacts/*?q=*")
    assert.strictEqual(LoggedUrl.masked("/apix/v1", "/api"), "/*/v1")
  })
})
