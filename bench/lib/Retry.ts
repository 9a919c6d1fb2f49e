/** Starting a stack again when its start failed. */
import { startStack } from "./Stack.js"
import type { Stack, StackOptions } from "./Stack.js"

/**
 * `startStack`, up to `attempts` times: the api node and the runner migrate the fresh database at
 * the same moment, and now and then one of them dies on the race (`duplicate key value violates
 * unique constraint "pg_type_typname_nsp_index"`, a concurrent CREATE TABLE).
 */
export const startStackRetrying = async (options: StackOptions, attempts = 3): Promise<Stack> => {
  for (let attempt = 1;; attempt++) {
    try {
      return await startStack(options)
    } catch (error) {
      if (attempt >= attempts) throw error
      console.error(`stack start failed (attempt ${attempt}), starting again: ${String(error).split("\n")[0]}`)
    }
  }
}
