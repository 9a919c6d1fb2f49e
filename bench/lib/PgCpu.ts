/**
 * Postgres CPU of ONE database, split by the process that holds each connection: the backends
 * connected to the database (`pg_stat_activity`), matched to a client process through the TCP
 * port of the client's socket (/proc/net/tcp and /proc/<pid>/fd). Other databases on the same
 * server (other benchmarks, other test runs) are not counted, nor the server's shared background
 * processes (WAL writer, checkpointer, autovacuum).
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import type pg from "pg"
import { cpuSeconds } from "./Measure.js"

/** The local TCP ports of the sockets `pid` holds open. */
const portsOf = (pid: number): Set<number> => {
  const inodes = new Set<string>()
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`)
        const m = /^socket:\[(\d+)\]$/.exec(link)
        if (m) inodes.add(m[1]!)
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return new Set()
  }
  const ports = new Set<number>()
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = ""
    try {
      text = readFileSync(file, "utf8")
    } catch {
      continue
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/)
      if (fields.length < 10 || !inodes.has(fields[9]!)) continue
      ports.add(parseInt(fields[1]!.split(":")[1]!, 16))
    }
  }
  return ports
}

export type Owners = Record<string, number>

/** CPU seconds so far of the database's backends, summed per owner name (and `other`, `total`). */
export const backendCpu = async (
  db: pg.Client,
  owners: Owners
): Promise<Map<number, { owner: string; cpu: number }>> => {
  const ports = Object.entries(owners).map(([name, pid]) => [name, portsOf(pid)] as const)
  const rows = await db.query(
    "SELECT pid, client_port FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
  )
  const result = new Map<number, { owner: string; cpu: number }>()
  for (const row of rows.rows as Array<{ pid: number; client_port: number | null }>) {
    const owner = ports.find(([, set]) => row.client_port !== null && set.has(row.client_port))?.[0] ?? "other"
    try {
      result.set(row.pid, { owner, cpu: cpuSeconds(row.pid) })
    } catch {
      // ended meanwhile
    }
  }
  return result
}

/**
 * CPU seconds per owner between two samples: a backend present in both counts its difference, a
 * backend that appeared counts all it used (it was opened in between); one that ended is lost.
 */
export const difference = (
  before: Map<number, { owner: string; cpu: number }>,
  after: Map<number, { owner: string; cpu: number }>
): Record<string, number> => {
  const totals: Record<string, number> = { total: 0 }
  for (const [pid, { owner, cpu }] of after) {
    const used = cpu - (before.get(pid)?.cpu ?? 0)
    totals[owner] = (totals[owner] ?? 0) + used
    totals["total"] = totals["total"]! + used
  }
  return totals
}
