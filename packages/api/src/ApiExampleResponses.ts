/**
 * The response examples of `ApiExamples.REQUESTS`, by operation id: what a server answered,
 * recorded by test/apiExamples.test.ts into `ApiExampleResponses.json` (`WRITE_API_EXAMPLES=1`).
 * Do not edit that file by hand: the test fails when a server's answer no longer matches. Data,
 * not code, so it is JSON (bundled as it is).
 */
import recorded from "./ApiExampleResponses.json" with { type: "json" }
import type { ResponseExample } from "./ApiExamples.js"

export const RESPONSES: Readonly<Record<string, ResponseExample>> = recorded
