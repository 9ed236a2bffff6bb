import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { isOneOf, JOB_STATUSES } from './enums';

// Durable queue for time-driven and after-commit work, claimed with FOR UPDATE SKIP LOCKED.
export const jobs = pgTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    kind: text('kind').notNull(),
    // At most one queued/running job per (kind, dedupe_key).
    dedupeKey: text('dedupe_key'),
    payload: jsonb('payload').notNull(),
    status: text('status', { enum: JOB_STATUSES }).notNull(),
    runAt: timestamp('run_at', { withTimezone: true, mode: 'date' }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date' }),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('jobs_dedupe').on(t.kind, t.dedupeKey).where(sql`${t.dedupeKey} is not null and ${t.status} in ('queued', 'running')`),
    index('jobs_due').on(t.runAt).where(sql`${t.status} in ('queued', 'running')`),
    // Retention finds finished jobs by when they finished (lib/db/retention.ts).
    index('jobs_finished').on(t.updatedAt).where(sql`${t.status} in ('done', 'failed')`),
    check('jobs_status_known', isOneOf(t.status, JOB_STATUSES)),
  ],
);

export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: jsonb('value').notNull(),
});
