import { NodeHttpServer, NodeSocketServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ListenFailure } from "@switchboard/infra"
import { Cause, Effect, Exit, FiberId, Logger, Option } from "effect"
import { createServer as createHttpServer } from "node:http"
import { createServer, type Server } from "node:net"
import type { AddressInfo } from "node:net"

const HTTP = { name: "HTTP API", portSetting: "HTTP_PORT" }

/** A port another server holds, and that server's close. */
const heldPort = Effect.acquireRelease(
  Effect.async<Server>((resume) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(Effect.map((server) => (server.address() as AddressInfo).port))

/** The lines `effect` logs, with their causes. */
const logged = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const lines: Array<{ message: unknown; cause: Cause.Cause<unknown> }> = []
    const logger = Logger.make(({ cause, message }) => void lines.push({ message, cause }))
    yield* effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    return lines
  })

describe("ListenFailure", () => {
  it.scoped("names the port and HTTP_PORT when the HTTP server's port is in use", () =>
    Effect.gen(function*() {
      const port = yield* heldPort
      const error = yield* Effect.flip(NodeHttpServer.make(() => createHttpServer(), { port, host: "127.0.0.1" }))
      const failure = Option.getOrThrow(ListenFailure.fromError(error, HTTP))
      assert.strictEqual(failure.reason, "in-use")
      assert.strictEqual(
        failure.message,
        `cannot listen on 127.0.0.1:${port} (HTTP API): the port is in use by another process ` +
          "(set HTTP_PORT to another port, or stop the other process)"
      )
    }))

  it.scoped("recognises a runner's cluster socket on a port in use", () =>
    Effect.gen(function*() {
      const port = yield* heldPort
      const error = yield* Effect.flip(NodeSocketServer.make({ port, host: "127.0.0.1" }))
      const refined = ListenFailure.refine({ name: "cluster", portSetting: "PORT" })(error)
      assert.instanceOf(refined, ListenFailure.ListenFailure)
      assert.include(refined.message, `127.0.0.1:${port} (cluster): the port is in use`)
    }))

  it("says a port below 1024 needs privileges, with its own sentence", () => {
    const denied = Object.assign(new Error("listen EACCES: permission denied 0.0.0.0:80"), {
      code: "EACCES",
      syscall: "listen",
      address: "0.0.0.0",
      port: 80
    })
    const failure = Option.getOrThrow(ListenFailure.fromError({ cause: denied }, HTTP))
    assert.strictEqual(failure.reason, "denied")
    assert.strictEqual(
      failure.message,
      "cannot listen on 0.0.0.0:80 (HTTP API): this process may not listen on that port: ports below 1024 need " +
        "privileges (set HTTP_PORT to 1024 or above, or give the process the CAP_NET_BIND_SERVICE capability)"
    )
    assert.include(ListenFailure.sentence(HTTP, "::", 80, "denied"), "cannot listen on [::]:80")
  })

  it("leaves any other error as it is", () => {
    const elsewhere = Object.assign(new Error("listen EADDRNOTAVAIL"), {
      code: "EADDRNOTAVAIL",
      syscall: "listen",
      address: "10.0.0.1",
      port: 3000
    })
    assert.isTrue(Option.isNone(ListenFailure.fromError({ cause: elsewhere }, HTTP)))
    assert.isTrue(Option.isNone(ListenFailure.fromError(new Error("boom"), HTTP)))
    const error = { cause: elsewhere }
    assert.strictEqual(ListenFailure.refine(HTTP)(error), error)
  })

  it.effect("logs a listener's failure as its line alone, any other failure as its cause, an interruption not", () =>
    Effect.gen(function*() {
      const failure = new ListenFailure.ListenFailure({
        listener: HTTP,
        host: "0.0.0.0",
        port: 3000,
        reason: "in-use",
        message: "cannot listen on 0.0.0.0:3000"
      })
      const asFailure = yield* logged(ListenFailure.logStop(Cause.fail(failure)))
      assert.deepStrictEqual(asFailure.map((line) => line.message), [["cannot listen on 0.0.0.0:3000"]])
      assert.isTrue(Cause.isEmpty(asFailure[0]!.cause))
      const asDefect = yield* logged(
        ListenFailure.logStop(Cause.parallel(Cause.die(failure), Cause.interrupt(FiberId.none)))
      )
      assert.deepStrictEqual(asDefect.map((line) => line.message), [["cannot listen on 0.0.0.0:3000"]])

      const other = Cause.fail(new Error("database unreachable"))
      const asOther = yield* logged(ListenFailure.logStop(other))
      assert.strictEqual(asOther.length, 1)
      assert.isTrue(Cause.isFailType(asOther[0]!.cause))
      const exit = yield* Effect.exit(Effect.interrupt)
      assert.deepStrictEqual(yield* logged(ListenFailure.logStop(Exit.isFailure(exit) ? exit.cause : Cause.empty)), [])
    }))
})
