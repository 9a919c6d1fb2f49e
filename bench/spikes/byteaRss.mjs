/**
 * Why the api node's RSS rises on its first large media read and then stays (bench/RESULTS.md §12):
 * node-postgres reads `bytea` in text format, as a hex string twice the bytes' size, so each 128 KiB
 * chunk read allocates a 256 KiB string (V8's large-object space) and a Buffer, garbage at once.
 * Reads 400 chunks (50 MiB) three times and prints the RSS peak after each round: the growth of the
 * first round does not grow with the rounds that follow. With a size in bytes as the argument it
 * reads each chunk in pieces of that size (`substring`), to compare.
 *
 *   node bench/spikes/byteaRss.mjs [piece-bytes]
 */
import pg from "pg"
const c = new pg.Client({ connectionString: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres" })
await c.connect()
await c.query("CREATE TEMP TABLE ch (seq int primary key, data bytea)")
await c.query("INSERT INTO ch SELECT g, decode(repeat(md5(g::text), 8192), 'hex') FROM generate_series(0, 399) g") // 400 chunks of 128 KiB
const { rows: [r] } = await c.query("SELECT sum(length(data))::bigint AS n, max(length(data)) AS m FROM ch")
console.log("stored", r)
const piece = Number(process.argv[2] ?? 0)
const rss = () => Math.round(process.memoryUsage().rss / 1048576)
const base = rss(); let peak = base; let bytes = 0
for (let round = 0; round < 3; round++) {
  for (let seq = 0; seq < 400; seq++) {
    if (!piece) { const { rows } = await c.query("SELECT data FROM ch WHERE seq = $1", [seq]); bytes += rows[0].data.length }
    else for (let off = 1; off <= r.m; off += piece) { const { rows } = await c.query("SELECT substring(data FROM $2 FOR $3) AS data FROM ch WHERE seq = $1", [seq, off, piece]); bytes += rows[0].data.length }
    peak = Math.max(peak, rss())
  }
  console.log(`piece ${piece || "whole"} round ${round}: read ${Math.round(bytes/1048576)} MiB, rss base ${base} peak ${peak} growth ${peak-base}`)
}
await c.end()
