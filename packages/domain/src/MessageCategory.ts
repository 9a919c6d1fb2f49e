/**
 * Message categories and the dispatch priority they carry: authentication goes
 * before utility, utility before marketing; within one category, first in first out.
 */
import { Schema } from "effect"

export const CATEGORIES = ["authentication", "utility", "marketing"] as const

export const Category = Schema.Literal(...CATEGORIES).annotations({
  identifier: "Category",
  description: "Controls dispatch priority: authentication > utility > marketing"
})
export type Category = typeof Category.Type

/** Dispatch priority: lower goes first. Stored on the message row so the queue index sorts by it. */
export const PRIORITY: Record<Category, number> = { authentication: 0, utility: 1, marketing: 2 }

/** Default when a send names no category and no template gives one. */
export const DEFAULT_CATEGORY: Category = "utility"

/** Queue order: priority, then FIFO (creation time, then id). */
export const compareQueued = (
  a: { readonly category: Category; readonly created_at: string; readonly id: string },
  b: { readonly category: Category; readonly created_at: string; readonly id: string }
): number =>
  PRIORITY[a.category] - PRIORITY[b.category] ||
  (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0) ||
  (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
