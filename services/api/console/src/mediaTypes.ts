/**
 * `media-types.mjs`: the project's one media-type reader (`packages/domain/src/ConsoleMedia.ts`)
 * as the console serves it, the same module its pages use, so a test reads types in the browser as
 * the server does.
 */
import { ConsoleMedia } from "@switchboard/domain"

export const { essenceOf, kindOfFile, limitBytes, normalize } = ConsoleMedia
