/**
 * A setting the process cannot read (`HTTP_PORT=abc`, a required one unset): the operator reads
 * ONE line naming each setting and what it must be, `cannot start: HTTP_PORT: Expected a network
 * port value`, not an empty message and the error's dump. The value given is never repeated: a
 * secret pasted into the wrong variable would otherwise land in the log.
 */
import { Cause, ConfigError } from "effect"

/** "HTTP_PORT: Expected a network port value", one part per setting, joined with "; ". */
export const describe = (error: ConfigError.ConfigError): string => {
  switch (error._op) {
    case "And":
      return `${describe(error.left)}; ${describe(error.right)}`
    case "Or":
      return `${describe(error.left)}; or ${describe(error.right)}`
    case "MissingData":
      return `${error.path.join("_")} is not set`
    case "InvalidData":
    case "SourceUnavailable":
    case "Unsupported":
      return `${error.path.join("_")}: ${error.message.replace(/,? but (?:received|got)\b[\s\S]*$/, "")}`
  }
}

/** Every setting error the process failed with, as its one line. */
export const linesOf = (cause: Cause.Cause<unknown>): ReadonlyArray<string> =>
  [...Cause.failures(cause)].filter(ConfigError.isConfigError)
    .map((error) => `cannot start: ${describe(error)}`)
