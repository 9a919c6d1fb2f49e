/** The contact import benchmark's file (also the kill -9 e2e's): see bench/contactsImport.ts. */
export const ROWS = 50_000
export const BAD = 37
export const REPEATS = 500

/** The file: unique rows, then `BAD` bad ones and `REPEATS` repeats spread through it. */
export const makeFile = () => {
  const lines = ["\ufeffphone_number,name,email,city"]
  let unique = 0
  for (let i = 0; i < ROWS; i++) {
    if (i % 1000 === 500 && i / 1000 < BAD) lines.push(`12,Bad ${i},,`)
    else if (i % 100 === 99 && unique > 0 && (i - 99) / 100 < REPEATS) {
      lines.push(`0151 ${String(10_000_000 + (unique - 1)).padStart(8, "0")},Repeat,,`)
    } else {
      const n = 10_000_000 + unique++
      lines.push(
        i % 10 === 0
          ? `0151 ${n},"Multi\nline ${i}",user${i}@example.com,Berlin`
          : `+49151${n},Name ${i},,Hamburg`
      )
    }
  }
  return { text: lines.join("\n") + "\n", unique }
}
