import { and, desc, eq, gt, gte, lt, lte, or } from 'drizzle-orm';
import type { Db } from '../db/client';
import { events } from '../db/schema';
import { isTestClock } from '../clock';
import { toPage } from '../api/pagination';
import type { EventListQuery } from '../api/schemas/events';
import { idAt } from './dashboard';

/** Ids may be minted a little before or after their row's created_at (same clock, other instant). */
const ID_PAD_MS = 3600_000;

/**
 * The event explorer's query: the filters of `listEvents` (GET /v1/companies/{id}/events), same
 * meaning, same order, plus an id window derived from the time range. Ids are time-ordered, so
 * the window turns every filter combination into an index range scan on (company_id, id),
 * (company_id, state, id), (company_id, type, id) or (account_id, id) that starts and stops at the
 * range's ends. Without it PostgreSQL walks the id index backwards from the newest event and
 * filters on created_at: on 10 million events a day a month ago took 24 s, and a range with
 * fewer than a page of events read the whole table (see bench/README.md, Console).
 *
 * Under the test clock ids carry real time while created_at carries the test clock's, so there
 * the window is left out (test databases are small).
 */
export async function exploreEvents({ db, companyId, q, now }: { db: Db; companyId: string; q: EventListQuery; now: Date }) {
  const stateFilter =
    q.state === 'pending'
      ? and(eq(events.state, 'pending'), gt(events.expiresAt, now))
      : q.state === 'cancelled'
        ? or(eq(events.state, 'cancelled'), and(eq(events.state, 'pending'), lte(events.expiresAt, now)))
        : q.state
          ? eq(events.state, q.state)
          : undefined;
  const hint = !isTestClock();
  const rows = await db
    .select()
    .from(events)
    .where(
      and(
        eq(events.companyId, companyId),
        q.account_id ? eq(events.accountId, q.account_id) : undefined,
        q.type ? eq(events.type, q.type) : undefined,
        stateFilter,
        q.created_gte ? gte(events.createdAt, new Date(q.created_gte)) : undefined,
        q.created_lt ? lt(events.createdAt, new Date(q.created_lt)) : undefined,
        hint && q.created_gte ? gte(events.id, idAt('ev', new Date(q.created_gte).getTime() - ID_PAD_MS)) : undefined,
        hint && q.created_lt ? lt(events.id, idAt('ev', new Date(q.created_lt).getTime() + ID_PAD_MS)) : undefined,
        q.starting_after ? lt(events.id, q.starting_after) : undefined,
      ),
    )
    .orderBy(desc(events.id))
    .limit(q.limit + 1);
  return toPage(rows, q.limit);
}
