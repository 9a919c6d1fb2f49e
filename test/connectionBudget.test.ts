/**
 * The connection budget (docs/CONFIGURATION.md "Connection budget"): a process whose pool the
 * Postgres server cannot hold refuses to start with one line, before it migrates or listens;
 * the arithmetic of a process's share, the refusal and the warning.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { ConnectionBudget } from "@switchboard/db"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { once } from "node:events"
import pg from "pg"
import { freePort, startService } from "./support/Processes.js"

describe("a process's share of the Postgres server", () => {
  const server = { maxConnections: 100, reserved: 3, inUse: 1 }

  it("is its pool and the LISTEN client beside it", () => {
    assert.strictEqual(ConnectionBudget.share(10), 11)
  })

  it("is refused, in one line without a value of the URL, when the server cannot hold it at all", () => {
    assert.isUndefined(ConnectionBudget.refusal(96, server), "96 + 1 fit in 100 - 3")
    const line = ConnectionBudget.refusal(97, server)
    assert.strictEqual(
      line,
      "cannot start: DATABASE_POOL_SIZE=97 lets this process open up to 98 Postgres connections, and the server " +
        "takes at most 97 (max_connections 100, 3 reserved for superusers): lower DATABASE_POOL_SIZE or raise " +
        "max_connections (docs/CONFIGURATION.md \"Connection budget\")"
    )
  })

  it("is warned about when the server has fewer free slots now than the process may open", () => {
    // 87 open, this process's first one among them: 11 more fit in 97
    assert.isUndefined(ConnectionBudget.warning(10, { ...server, inUse: 87 }))
    assert.include(
      ConnectionBudget.warning(10, { ...server, inUse: 88 }) ?? "",
      "Postgres has 10 free connection(s) for this process now (max_connections 100, 3 reserved, 88 open)"
    )
  })
})

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("a process whose pool the server cannot hold (real Postgres)", () => {
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let maxConnections = 0

  beforeAll(async () => {
    database = await e2eDatabase(url!, "budget")
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    maxConnections = Number((await client.query("SHOW max_connections")).rows[0].max_connections)
    await client.end()
  }, 60_000)

  afterAll(() => database?.drop(), 60_000)

  it.each(["api", "runner"] as const)("%s: refuses to start with one line naming DATABASE_POOL_SIZE", async (role) => {
    const port = await freePort()
    const service = startService(role, {
      DATABASE_URL: database!.url,
      DATABASE_POOL_SIZE: String(maxConnections),
      HOST: "127.0.0.1",
      PORT: String(await freePort()),
      LOG_FORMAT: "json"
    }, port)
    const [code] = await once(service.child, "exit")
    const output = service.output()
    assert.strictEqual(code, 1, output)
    const lines = output.split("\n").filter((l) => l.includes("DATABASE_POOL_SIZE"))
    assert.lengthOf(lines, 1, output)
    assert.include(lines[0], `cannot start: DATABASE_POOL_SIZE=${maxConnections} lets this process open up to`)
    assert.include(lines[0], `max_connections ${maxConnections}`)
    assert.notInclude(output, "    at ", "no stack trace")
    assert.notInclude(output, new URL(database!.url).password || "\u0000", "never the URL's password")
    assert.notInclude(output, "applying", "refused before it migrates")
  }, 90_000)
})
