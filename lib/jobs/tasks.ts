// The wiring of due work: domain functions registered with the worker, one line each.
import { registerJobHandler, registerTask } from './worker';
import { nextChargeCheck, reconcilePendingCharges } from '../billing/charges/charges';
import { nextRenewalDue, renewDuePlans } from '../billing/plans/renewals';
import { nextRefillDue, queueDueRefills, runPeriodicRefill, runThresholdRefill } from '../billing/refills/refills';

registerTask({ name: 'reconcile-charges', run: reconcilePendingCharges, nextDue: nextChargeCheck });
registerTask({ name: 'plan-renewals', run: renewDuePlans, nextDue: nextRenewalDue });
registerTask({ name: 'monthly-refills', run: queueDueRefills, nextDue: nextRefillDue });
registerJobHandler('periodic_refill', runPeriodicRefill);
registerJobHandler('threshold_refill', runThresholdRefill);
import { deliverDueWebhooks, nextWebhookDue, stopDeliveries } from '../billing/webhooks/delivery';
registerTask({ name: 'webhook-deliveries', run: deliverDueWebhooks, nextDue: nextWebhookDue, stop: stopDeliveries });
import { purgeFinishedJobs, purgeIdempotencyKeys, purgeWebhookLogs } from './retention';
registerTask({ name: 'purge-idempotency-keys', run: purgeIdempotencyKeys });
registerTask({ name: 'purge-finished-jobs', run: purgeFinishedJobs });
registerTask({ name: 'purge-webhook-logs', run: purgeWebhookLogs });
