/**
 * Contact import files (docs/API.md "Contact imports"): a CSV with a header row; `phone_number`,
 * `name` and `email` columns, any other column an attribute. Pure: the API counts rows with it
 * and the import worker turns each row into a contact or a reasoned failure. Errors never carry
 * a cell's value.
 */
import { parse } from "csv-parse/sync"
import type { CountryCode } from "libphonenumber-js/max"
import { isSupportedCountry, parsePhoneNumberFromString } from "libphonenumber-js/max"
import { contactFieldProblem, hasLostText } from "./ContactFields.js"

export const MAX_IMPORT_BYTES = 5 * 1024 * 1024
export const MAX_IMPORT_ROWS = 50_000

export interface ImportRowError {
  /** data row, 1-based (the header is not a row) */
  readonly row: number
  /** line of the file where the row starts */
  readonly line: number
  readonly column: string | null
  readonly code: string
  readonly message: string
}

export type ImportRow =
  | {
    readonly _tag: "Valid"
    readonly row: number
    readonly line: number
    readonly phone: string
    readonly name: string | null
    readonly email: string | null
    readonly attributes: Record<string, string>
  }
  | { readonly _tag: "Invalid"; readonly error: ImportRowError }

export type ParsedFile =
  | { readonly _tag: "Parsed"; readonly rows: ReadonlyArray<ImportRow> }
  | { readonly _tag: "Refused"; readonly reason: "missing_phone_number_column" | "no_header" | "unreadable" }

export const isCountryCode = (code: string): code is CountryCode => isSupportedCountry(code)

const normalizeRow = (
  header: ReadonlyArray<string>,
  cells: ReadonlyArray<string>,
  row: number,
  line: number,
  defaultCountry: CountryCode | undefined
): ImportRow => {
  const fail = (column: string | null, code: string, message: string): ImportRow => ({
    _tag: "Invalid",
    error: { row, line, column, code, message }
  })
  // bytes that were not UTF-8, or U+0000, became U+FFFD when the file was read: the row's text is lost
  const lost = cells.findIndex((cell, i) => cell !== "" && (hasLostText(cell) || hasLostText(header[i] ?? "")))
  if (lost >= 0) {
    const column = header[lost] ?? ""
    return fail(
      hasLostText(column) ? null : column,
      "invalid_text",
      "The row holds bytes that are not UTF-8 text, or U+0000"
    )
  }
  let phone = ""
  let name: string | null = null
  let email: string | null = null
  const attributes: Record<string, string> = {}
  header.forEach((column, i) => {
    const value = (cells[i] ?? "").trim()
    if (column === "phone_number") phone = value
    else if (column === "name") name = value === "" ? null : value
    else if (column === "email") email = value === "" ? null : value
    else if (value !== "" && column !== "") attributes[column] = value
  })
  if (phone === "") return fail("phone_number", "missing_phone_number", "The row has no phone number")
  const parsed = parsePhoneNumberFromString(phone, defaultCountry)
  if (!parsed || !parsed.isPossible()) {
    return fail(
      "phone_number",
      "invalid_phone_number",
      defaultCountry || phone.startsWith("+")
        ? "Not a possible phone number"
        : "Not a possible phone number (a national number needs default_country)"
    )
  }
  // the API's own rules for a contact (docs/API.md "Contacts"): a row the API would refuse fails
  const problem = contactFieldProblem({ name, email, attributes })
  if (problem !== undefined) return fail(problem.column, problem.code, problem.message)
  return { _tag: "Valid", row, line, phone: parsed.number, name, email, attributes }
}

/**
 * Parses the whole file: BOM, quoted fields spanning lines, and rows the parser cannot read
 * (wrong column count, broken quotes) become `invalid_row` failures with their line.
 */
export const parseContactCsv = (text: string, defaultCountry?: CountryCode): ParsedFile => {
  const records: Array<{ cells?: Array<string>; line: number; bad?: string }> = []
  // a record starts on the line after the previous one ended (quoted fields may span lines)
  let lastEnd = 0
  try {
    parse(text, {
      bom: true,
      relax_column_count: false,
      skip_empty_lines: true,
      skip_records_with_error: true,
      on_skip: (error: { lines?: number; code?: string } | undefined) => {
        records.push({ line: lastEnd + 1, bad: error?.code ?? "CSV_INVALID" })
        lastEnd = error?.lines ?? lastEnd + 1
      },
      on_record: (record: Array<string>, context: { lines: number }) => {
        records.push({ cells: record, line: lastEnd + 1 })
        lastEnd = context.lines
        return null
      }
    } as never)
  } catch {
    return { _tag: "Refused", reason: "unreadable" }
  }
  const [head, ...data] = records
  if (!head?.cells) return { _tag: "Refused", reason: "no_header" }
  const header = head.cells.map((c) => c.trim().toLowerCase())
  if (!header.includes("phone_number")) return { _tag: "Refused", reason: "missing_phone_number_column" }
  const rows = data.map((r, i): ImportRow =>
    r.cells
      ? normalizeRow(header, r.cells, i + 1, r.line, defaultCountry)
      : {
        _tag: "Invalid",
        error: {
          row: i + 1,
          line: r.line,
          column: null,
          code: "invalid_row",
          message: "The row could not be read as CSV (column count or quoting)"
        }
      }
  )
  return { _tag: "Parsed", rows }
}
