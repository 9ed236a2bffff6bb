import { and, desc, lt, type SQL } from 'drizzle-orm';
import type { PgColumn, PgSelect } from 'drizzle-orm/pg-core';

/** A page of a list, newest first: the items and whether more follow the last one. */
export type Page<T> = { items: T[]; hasMore: boolean };

/** What every list takes: how many items, and the id to continue after (keyset, never OFFSET). */
export type PageQuery = { limit: number; starting_after?: string };

/** Fetch limit + 1 rows, ordered newest first; the extra row only tells whether more exist. */
export function toPage<T>(rows: T[], limit: number): Page<T> {
  return { items: rows.slice(0, limit), hasMore: rows.length > limit };
}

/**
 * One page of a list, for every list of the service: rows matching `where`, newest first by
 * `id` (ids are time-ordered), after `starting_after`, and one row more than the page to tell
 * whether more follow. With an index on (scope, id) it is a range scan that stops after
 * limit + 1 rows, so the millionth page costs what the first does. `query` is a select made
 * dynamic (`db.select().from(t).$dynamic()`), joins included.
 */
export async function keysetPage<T extends PgSelect>(query: T, id: PgColumn, page: PageQuery, ...where: (SQL | undefined)[]): Promise<Page<Awaited<T>[number]>> {
  const rows = await query
    .where(and(...where, page.starting_after ? lt(id, page.starting_after) : undefined))
    .orderBy(desc(id))
    .limit(page.limit + 1);
  return toPage(rows as Awaited<T>[number][], page.limit);
}
