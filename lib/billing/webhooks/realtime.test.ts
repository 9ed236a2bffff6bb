import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { createAccount, grant, topicWebhook } from '../../testing/scenario';
import { startWorker, stopWorker } from '../../jobs/worker';
import { startReceiver, type Receiver } from '../../testing/webhook-receiver';
import { withSettings } from '../../env';

// Real time and the real worker loop (ticking every second, as in the server): no test clock.
delete process.env.BILLING_TEST_CLOCK;
delete process.env.WORKER_INTERVAL_MS;
const t = useTestDatabase();

describe('delivery with the in-process worker, in real time', () => {
  const receivers: Receiver[] = [];
  // The loop's ticks run under these settings (they start inside): a hanging receiver holds its
  // send for a minute, longer than anything here waits, so only a sender that queues behind it
  // could be late.
  beforeAll(() => withSettings({ WEBHOOK_TIMEOUT_MS: '60000' }, startWorker));
  afterAll(async () => {
    // no more ticks or claims; resolves once the sends in flight are recorded
    const stopped = stopWorker();
    for (const r of receivers) {
      r.answer(() => ({ status: 200 }));
      r.release();
    }
    await stopped;
    for (const r of receivers) await r.close();
  });

  it('sends within about a second of the change, while another receiver has been hanging for seconds', async () => {
    const co = await newCompany(t);
    const slow = await startReceiver(() => 'hang');
    const fast = await startReceiver();
    receivers.push(slow, fast);
    await topicWebhook(co, slow.url, ['balance_change']);
    await topicWebhook(co, fast.url, ['negative_balance']);
    const account = await createAccount(co);
    await grant(co, account, 1);
    await slow.waitFor(1); // the hanging receiver now holds a send in flight
    // and keeps holding it for longer than any one run of the worker lasted
    await new Promise((resolve) => setTimeout(resolve, 6000));
    expect(slow.requests[0].answered).toBe(false);

    const started = Date.now();
    const r = await co.call('POST', `/v1/accounts/${account}/events`, { body: { type: 'q', cost_override_amount: 5, cost_override_denomination: 'credits' } });
    expect(r.status).toBe(200);
    await fast.waitFor(1);
    // Typically well under a second (the worker ticks every second); the bound is loose for a
    // busy machine and still far below the hanging send's minute.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(fast.requests[0].json).toMatchObject({ topic: 'negative_balance', account_id: account, balance: '-4' });
    expect(slow.requests[0].answered).toBe(false);
  });
});
