import { bigint, numeric, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Per company and closed hour: events by state and cost denomination, charges by status, with
 * their sums. Written by the worker once an hour can no longer change (lib/db/hourly-totals.ts),
 * so the dashboard's 30 days are a few thousand of these rows instead of millions of events.
 */
export const hourlyTotals = pgTable(
  'hourly_totals',
  {
    companyId: text('company_id').notNull(),
    hour: timestamp('hour', { withTimezone: true, mode: 'date' }).notNull(),
    /** 'event' or 'charge'. */
    kind: text('kind').notNull(),
    /** The event's state or the charge's status. */
    state: text('state').notNull(),
    /** The events' cost denomination ('' when unpriced; always '' for charges, which are USD cents). */
    denomination: text('denomination').notNull(),
    count: bigint('count', { mode: 'number' }).notNull(),
    /** Sum of the events' cost_amount (exact decimal; null when none has one) or of the charges' amount in cents. */
    total: numeric('total'),
  },
  (t) => [primaryKey({ name: 'hourly_totals_pkey', columns: [t.companyId, t.hour, t.kind, t.state, t.denomination] })],
);
