// The wiring of due work: domain functions registered with the worker, one line each.
import { registerTask } from './worker';
import { reconcilePendingCharges } from '../billing/charges/charges';

registerTask({ name: 'reconcile-charges', run: reconcilePendingCharges });
