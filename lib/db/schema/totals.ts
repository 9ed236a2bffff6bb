import { bigint, index, jsonb, numeric, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

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

/**
 * Completed events per closed hour, account, type and cost denomination, with their exact sums:
 * what the usage reports read instead of the events (lib/billing/usage). Each hour also has the
 * company's rows over all its accounts, under account_id '' (a company's 30 days are then a few
 * thousand rows, whatever its number of accounts). Written by the worker once an hour can no
 * longer change (lib/db/usage-totals.ts).
 */
export const usageHourly = pgTable(
  'usage_hourly',
  {
    companyId: text('company_id').notNull(),
    /** The account, or '' for the company's total over all accounts. */
    accountId: text('account_id').notNull(),
    hour: timestamp('hour', { withTimezone: true, mode: 'date' }).notNull(),
    type: text('type').notNull(),
    /** The events' cost denomination; '' for events without a cost. */
    denomination: text('denomination').notNull(),
    events: bigint('events', { mode: 'number' }).notNull(),
    /** Sum of cost_amount (exact); null when no event has a cost. */
    cost: numeric('cost'),
    /** Per quantity name, the exact sum as a decimal string; null when no event has quantities. */
    quantities: jsonb('quantities').$type<Record<string, string> | null>(),
  },
  (t) => [primaryKey({ name: 'usage_hourly_pkey', columns: [t.companyId, t.accountId, t.hour, t.type, t.denomination] })],
);

/**
 * The same per closed hour, account and cost denomination for each property a company declared
 * (companies.usage_properties), by the property's value (null for events without it): what usage
 * grouped by a declared property reads instead of the events. Company totals under account_id ''.
 */
export const usageHourlyProperties = pgTable(
  'usage_hourly_properties',
  {
    companyId: text('company_id').notNull(),
    /** The account, or '' for the company's total over all accounts. */
    accountId: text('account_id').notNull(),
    hour: timestamp('hour', { withTimezone: true, mode: 'date' }).notNull(),
    property: text('property').notNull(),
    /** The property's text (as `properties ->> property`); null for events without it. */
    value: text('value'),
    denomination: text('denomination').notNull(),
    events: bigint('events', { mode: 'number' }).notNull(),
    cost: numeric('cost'),
    quantities: jsonb('quantities').$type<Record<string, string> | null>(),
  },
  (t) => [index('usage_hourly_properties_read').on(t.companyId, t.accountId, t.property, t.hour), index('usage_hourly_properties_hour').on(t.hour)],
);

/**
 * Per company and declared property, the first hour usage_hourly_properties holds it for: null
 * when it reaches back to the start of usage_hourly. A property declared after the roll-up began
 * starts at the hour the roll-up had reached; the worker then fills the older hours, a week per
 * run, moving this back (lib/db/usage-totals.ts).
 */
export const usagePropertyMarks = pgTable(
  'usage_property_marks',
  {
    companyId: text('company_id').notNull(),
    property: text('property').notNull(),
    fromHour: timestamp('from_hour', { withTimezone: true, mode: 'date' }),
  },
  (t) => [primaryKey({ name: 'usage_property_marks_pkey', columns: [t.companyId, t.property] })],
);
