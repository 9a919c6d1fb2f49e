/**
 * Test seam, preloaded with `--import` (test/support/Chaos.ts `startRunner({ slowBootMs })`): the
 * process is starved of CPU for its first `SLOW_BOOT_MS` milliseconds, its event loop blocked
 * 400 ms of every 500, as a process booting on a saturated machine is. The scale test starts its
 * new runners so: a runner must not be assigned shards before it can serve them.
 */
const until = Date.now() + Number(process.env.SLOW_BOOT_MS ?? 0)
const starve = () => {
  if (Date.now() >= until) return
  const end = Date.now() + 400
  while (Date.now() < end) {
    // busy: the process gets no other work done meanwhile
  }
  setTimeout(starve, 100).unref()
}
starve()
