/** A page of a list, newest first: the items and whether more follow the last one. */
export type Page<T> = { items: T[]; hasMore: boolean };

/** What every list takes: how many items, and the id to continue after (keyset, never OFFSET). */
export type PageQuery = { limit: number; starting_after?: string };

/** Fetch limit + 1 rows, ordered newest first; the extra row only tells whether more exist. */
export function toPage<T>(rows: T[], limit: number): Page<T> {
  return { items: rows.slice(0, limit), hasMore: rows.length > limit };
}
