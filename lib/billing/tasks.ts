import { query, sql, type Db } from '../db/client';
import { registerJobHandler, registerTask } from '../jobs/worker';
import { expireHolds } from './events/events';
import { settleAllDueGrants } from './balances/grants';
import { renewDuePlans } from './plans/renewals';
import { nextRenewalDue } from '../db/sql/renewals';
import { nextRefillDue, queueDueRefills, runPeriodicRefill, runThresholdRefill } from './refills/refills';
import { nextChargeCheck } from './charges/charges';
import { reconcileCharges } from './settlement';
import { deliverDueWebhooks, stopDeliveries } from './webhooks/sender';
import { nextWebhookDue } from '../db/sql/deliveries';
import { nextFinishedJobPurge, nextIdempotencyKeyPurge, nextWebhookLogPurge, purgeFinishedJobs, purgeIdempotencyKeys, purgeWebhookLogs } from '../db/retention';
import { nextRollUp, rollUpHours } from '../db/hourly-totals';
import { nextUsageRollUp, RECENT_EVERY_MS, rollUpRecentUsage, rollUpUsage } from '../db/usage-totals';
import { VACUUM_EVERY_MS, vacuumEmbedded } from '../db/maintenance';

const HOUR_MS = 3600_000;

/**
 * The domain's time-driven work, registered with the worker: called once at start by every
 * process that runs or steps work (the server's boot, `npm run worker`, the test harness).
 * Registering again changes nothing.
 */
export function registerBillingTasks(): void {
  registerTask({ name: 'expire-holds', run: expireHolds, nextDue: nextHoldExpiry });
  // Grants whose expiry (or start) has come: written as of their own time (reads and gates see
  // them so before this runs).
  registerTask({ name: 'expire-grants', run: (db, now) => settleAllDueGrants(db, now), nextDue: nextGrantDue });
  registerTask({ name: 'reconcile-charges', run: reconcileCharges, nextDue: nextChargeCheck });
  registerTask({ name: 'plan-renewals', run: renewDuePlans, nextDue: nextRenewalDue });
  registerTask({ name: 'monthly-refills', run: queueDueRefills, nextDue: nextRefillDue });
  registerJobHandler('periodic_refill', runPeriodicRefill);
  registerJobHandler('threshold_refill', runThresholdRefill);
  registerTask({ name: 'webhook-deliveries', run: deliverDueWebhooks, nextDue: nextWebhookDue, stop: stopDeliveries });
  // Upkeep: each runs when its own next time comes (lib/jobs/worker.ts), so a step of the test
  // clock or a tick of the worker skips it until then.
  registerTask({ name: 'purge-idempotency-keys', run: purgeIdempotencyKeys, upkeep: { every: HOUR_MS, next: nextIdempotencyKeyPurge } });
  registerTask({ name: 'purge-finished-jobs', run: purgeFinishedJobs, upkeep: { every: HOUR_MS, next: nextFinishedJobPurge } });
  registerTask({ name: 'purge-webhook-logs', run: purgeWebhookLogs, upkeep: { every: HOUR_MS, next: nextWebhookLogPurge } });
  // The console dashboard's closed hours (lib/console/dashboard.ts).
  registerTask({ name: 'hourly-totals', run: rollUpHours, upkeep: { every: HOUR_MS, next: nextRollUp } });
  // The usage reports' closed hours (lib/billing/usage).
  registerTask({ name: 'usage-totals', run: rollUpUsage, upkeep: { every: HOUR_MS, next: nextUsageRollUp } });
  // The hours not closed yet, provisionally, so a usage read sums only minutes of events.
  registerTask({ name: 'usage-recent', run: rollUpRecentUsage, upkeep: { every: RECENT_EVERY_MS } });
  // PostgreSQL's autovacuum, for the embedded database, which has none.
  registerTask({ name: 'vacuum-embedded', run: (db, now, opts) => vacuumEmbedded(db, now, { stopping: opts?.stopping }), upkeep: { every: VACUUM_EVERY_MS } });
}

async function nextGrantDue(db: Db, after: Date): Promise<Date | null> {
  const [row] = await query<{ at: string | Date | null }>(db, sql`select min(grants_due_at) as at from balances where grants_due_at > ${after.toISOString()}::timestamptz`);
  return row?.at ? new Date(row.at) : null;
}

async function nextHoldExpiry(db: Db, after: Date): Promise<Date | null> {
  const [row] = await query<{ at: string | Date | null }>(db, sql`select min(expires_at) as at from events where state = 'pending' and expires_at > ${after.toISOString()}::timestamptz`);
  return row?.at ? new Date(row.at) : null;
}
