/**
 * The cluster's TCP transport with every connection authenticated (`ClusterHandshake`): what
 * `NodeClusterSocket.layer` composes (the same `SocketRunner`, msgpack, ping health checks), with
 * its two socket pieces replaced:
 *
 * - `clientProtocol`: each connection a node opens to a runner (api node -> runner, runner ->
 *   runner, health pings) completes the handshake on the raw socket before the cluster's RPC
 *   client may write on it;
 * - `socketServer`: the runner's listener hands a connection to the cluster's RPC server only once
 *   the peer proved the secret; anyone else is closed before a byte of theirs is decoded.
 *
 * The library's layers take no hook for this (`layerClientProtocol` opens `NodeSocket.makeNet`,
 * `layerSocketServer` a plain `NodeSocketServer`), so the composition is repeated here with ours.
 */
import {
  MessageStorage,
  RunnerAddress,
  RunnerHealth,
  Runners,
  RunnerStorage,
  Sharding,
  ShardingConfig,
  SocketRunner,
  SqlMessageStorage,
  SqlRunnerStorage
} from "@effect/cluster"
import { Socket, SocketServer } from "@effect/platform"
import { NodeSocket, NodeSocketServer } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import type { SqlClient } from "@effect/sql"
import { type ConfigError, Effect, Layer, Option, Redacted } from "effect"
import * as Net from "node:net"
import { ClusterAuthConfig } from "./ClusterAuthConfig.js"
import * as ClusterHandshake from "./ClusterHandshake.js"

/** As `NodeClusterSocket`'s client: a runner that does not accept the connection in 1 s is unavailable. */
const CONNECT_TIMEOUT = "1 second"

const keys = (auth: ClusterAuthConfig["Type"]): ReadonlyArray<Buffer> => auth.secrets.map(Redacted.value)

const peerOf = (conn: Net.Socket) => `${conn.remoteAddress ?? "unknown"}:${conn.remotePort ?? 0}`

/** A TCP connection to `address`, open, closed with the scope. */
const connect = (address: RunnerAddress.RunnerAddress) =>
  Effect.acquireRelease(
    Effect.async<Net.Socket, Socket.SocketError>((resume) => {
      const conn = Net.createConnection({ host: address.host, port: address.port })
      conn.once("connect", () => resume(Effect.succeed(conn)))
      // stays attached: an error after the cluster's reader detached must not crash the process
      conn.on("error", (cause) => resume(Effect.fail(new Socket.SocketGenericError({ reason: "Open", cause }))))
      return Effect.sync(() => conn.destroy())
    }).pipe(Effect.timeoutFail({
      duration: CONNECT_TIMEOUT,
      onTimeout: () => new Socket.SocketGenericError({ reason: "Open", cause: new Error("Connection timed out") })
    })),
    (conn) => Effect.sync(() => conn.destroySoon())
  )

/**
 * The connection the cluster's RPC client uses, opened again on every reconnect: TCP, then the
 * handshake. A failed handshake fails the open like a refused connection (the runner is
 * unavailable to this node), and is logged: it means the two nodes' `CLUSTER_SECRET`s share no
 * secret, or the address is not a runner of this version.
 */
const openAuthenticated = (address: RunnerAddress.RunnerAddress, auth: ClusterAuthConfig["Type"]) =>
  Effect.tap(connect(address), (conn) =>
    ClusterHandshake.asClient(conn, keys(auth), auth.handshakeTimeout).pipe(
      Effect.tapError((error) =>
        Effect.logWarning(
          `cluster connection to ${address.host}:${address.port} refused: ${error.reason} ` +
            "(does the runner hold one of this node's CLUSTER_SECRET values?)"
        )
      ),
      Effect.mapError((cause) => new Socket.SocketGenericError({ reason: "Open", cause }))
    ))

/** `Runners.RpcClientProtocol` over authenticated connections (`NodeClusterSocket.layerClientProtocol` + the handshake). */
export const clientProtocol: Layer.Layer<
  Runners.RpcClientProtocol,
  never,
  RpcSerialization.RpcSerialization | ClusterAuthConfig
> = Layer.effect(
  Runners.RpcClientProtocol,
  Effect.gen(function*() {
    const serialization = yield* RpcSerialization.RpcSerialization
    const auth = yield* ClusterAuthConfig
    return (address: RunnerAddress.RunnerAddress) =>
      Effect.flatMap(
        NodeSocket.fromDuplex(openAuthenticated(address, auth)),
        (socket) =>
          RpcClient.makeProtocolSocket().pipe(
            Effect.provideService(Socket.Socket, socket),
            Effect.provideService(RpcSerialization.RpcSerialization, serialization)
          )
      )
  })
)

/**
 * The runner's listener (`HOST:PORT`, or `runnerListenAddress`) whose connections reach the
 * cluster's RPC server only after the handshake. A refused connection is closed and logged with
 * the peer's address (a connection closed before it said anything, e.g. a TCP health check, only
 * at debug level).
 */
export const socketServer: Layer.Layer<
  SocketServer.SocketServer,
  SocketServer.SocketServerError,
  ShardingConfig.ShardingConfig | ClusterAuthConfig
> = Layer.scoped(
  SocketServer.SocketServer,
  Effect.gen(function*() {
    const config = yield* ShardingConfig.ShardingConfig
    const auth = yield* ClusterAuthConfig
    const listen = Option.orElse(config.runnerListenAddress, () => config.runnerAddress)
    if (Option.isNone(listen)) return yield* Effect.dieMessage("a runner needs its address (HOST, PORT)")
    const server = yield* NodeSocketServer.make({ host: listen.value.host, port: listen.value.port })
    const refuse = (conn: Net.Socket, error: ClusterHandshake.HandshakeError) =>
      Effect.zipRight(
        Effect.sync(() => conn.destroy()),
        error.reason === "Closed"
          ? Effect.logDebug(`cluster connection from ${peerOf(conn)} closed before its handshake`)
          : Effect.logWarning(`cluster connection from ${peerOf(conn)} refused: ${error.reason}`)
      )
    return SocketServer.SocketServer.of({
      address: server.address,
      run: (handler) =>
        server.run((socket) =>
          Effect.flatMap(Effect.serviceOption(NodeSocket.NetSocket), (conn) => {
            // `NodeSocketServer` provides the raw socket to its handler; without it nothing is proven
            if (Option.isNone(conn)) return Effect.dieMessage("cluster connection without its TCP socket")
            return ClusterHandshake.asServer(conn.value, keys(auth), auth.handshakeTimeout).pipe(
              Effect.onInterrupt(() => Effect.sync(() => conn.value.destroy())),
              Effect.matchEffect({ onFailure: (error) => refuse(conn.value, error), onSuccess: () => handler(socket) })
            )
          })
        )
    })
  })
)

const serialization = RpcSerialization.layerMsgPack

/**
 * A runner: listens on `HOST:PORT` and connects to the other runners, both authenticated; the
 * storages are brought by the caller (`NodeClusterSocket.layer({ storage: "byo" })`).
 */
export const runner = (
  shardingConfig: Partial<ShardingConfig.ShardingConfig["Type"]>
): Layer.Layer<
  Sharding.Sharding | Runners.Runners,
  SocketServer.SocketServerError | ConfigError.ConfigError,
  MessageStorage.MessageStorage | RunnerStorage.RunnerStorage | ClusterAuthConfig
> =>
  SocketRunner.layer.pipe(
    Layer.provide([socketServer, clientProtocol]),
    Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clientProtocol))),
    Layer.provide(ShardingConfig.layerFromEnv(shardingConfig)),
    Layer.provide(serialization)
  )

/** A client-only node (an api node): reaches every entity over authenticated connections, hosts none. */
export const client = (
  shardingConfig: Partial<ShardingConfig.ShardingConfig["Type"]>
): Layer.Layer<
  Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage,
  ConfigError.ConfigError,
  SqlClient.SqlClient | ClusterAuthConfig
> =>
  SocketRunner.layerClientOnly.pipe(
    Layer.provide(clientProtocol),
    Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
    Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
    Layer.provide(ShardingConfig.layerFromEnv(shardingConfig)),
    Layer.provide(serialization)
  )
