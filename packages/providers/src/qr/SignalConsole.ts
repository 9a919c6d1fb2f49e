/**
 * libsignal (under Baileys) reports session changes with `console.info`/`console.warn`, passing the
 * whole session record: root and chain keys. Those lines would put a QR channel's Signal keys in
 * the service's output, so they are dropped here, once per process, before any QR connection
 * opens. Every other console line passes unchanged.
 */
const SIGNAL_LINES = [
  "Closing session",
  "Opening session",
  "Removing old closed session",
  "Session already closed",
  "Session already open",
  "Closing open session",
  "Closing stale open session",
  "Migrating session",
  "Decrypted message with closed session",
  "Unhandled bucket type"
]

const isSignalLine = (args: ReadonlyArray<unknown>) =>
  typeof args[0] === "string" && SIGNAL_LINES.some((prefix) => (args[0] as string).startsWith(prefix))

type Methods = Pick<Console, "log" | "info" | "warn" | "error" | "debug">

/** Wraps `target`'s methods so that libsignal's session lines go nowhere. */
export const filterSignalLines = (target: Methods): void => {
  for (const method of ["log", "info", "warn", "error", "debug"] as const) {
    const original = target[method].bind(target)
    target[method] = (...args: Array<unknown>) => {
      if (!isSignalLine(args)) original(...args)
    }
  }
}

let installed = false

/** `filterSignalLines` on the process's console, once. */
export const silenceSignalConsole = (): void => {
  if (installed) return
  installed = true
  filterSignalLines(console)
}
