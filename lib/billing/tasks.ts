import { query, sql, type Db } from '../db/client';
import { registerJobHandler, registerTask } from '../jobs/worker';
import { expireHolds } from './events/events';
import { nextRenewalDue, renewDuePlans } from './plans/renewals';
import { nextRefillDue, queueDueRefills, runPeriodicRefill, runThresholdRefill } from './refills/refills';
import { nextChargeCheck } from './charges/charges';
import { reconcileCharges } from './settlement';
import { deliverDueWebhooks, nextWebhookDue, stopDeliveries } from './webhooks/delivery';
import { purgeFinishedJobs, purgeIdempotencyKeys, purgeWebhookLogs } from '../db/retention';
import { rollUpHours } from '../db/hourly-totals';
import { rollUpUsage } from '../db/usage-totals';
import { vacuumEmbedded } from '../db/maintenance';

/**
 * The domain's time-driven work, registered with the worker: called once at start by every
 * process that runs or steps work (the server's boot, `npm run worker`, the test harness).
 * Registering again changes nothing.
 */
export function registerBillingTasks(): void {
  registerTask({ name: 'expire-holds', run: expireHolds, nextDue: nextHoldExpiry });
  registerTask({ name: 'reconcile-charges', run: reconcileCharges, nextDue: nextChargeCheck });
  registerTask({ name: 'plan-renewals', run: renewDuePlans, nextDue: nextRenewalDue });
  registerTask({ name: 'monthly-refills', run: queueDueRefills, nextDue: nextRefillDue });
  registerJobHandler('periodic_refill', runPeriodicRefill);
  registerJobHandler('threshold_refill', runThresholdRefill);
  registerTask({ name: 'webhook-deliveries', run: deliverDueWebhooks, nextDue: nextWebhookDue, stop: stopDeliveries });
  registerTask({ name: 'purge-idempotency-keys', run: purgeIdempotencyKeys });
  registerTask({ name: 'purge-finished-jobs', run: purgeFinishedJobs });
  registerTask({ name: 'purge-webhook-logs', run: purgeWebhookLogs });
  // The console dashboard's closed hours (lib/console/dashboard.ts).
  registerTask({ name: 'hourly-totals', run: rollUpHours });
  // The usage reports' closed hours (lib/billing/usage).
  registerTask({ name: 'usage-totals', run: rollUpUsage });
  // PostgreSQL's autovacuum, for the embedded database, which has none.
  registerTask({ name: 'vacuum-embedded', run: (db, now, opts) => vacuumEmbedded(db, now, { stopping: opts?.stopping }) });
}

async function nextHoldExpiry(db: Db, after: Date): Promise<Date | null> {
  const [row] = await query<{ at: string | Date | null }>(db, sql`select min(expires_at) as at from events where state = 'pending' and expires_at > ${after.toISOString()}::timestamptz`);
  return row?.at ? new Date(row.at) : null;
}
