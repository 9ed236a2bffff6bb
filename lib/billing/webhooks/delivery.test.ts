import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { newCompany, underSettings, useTestDatabase } from '../../testing/harness';
import { withSettings } from '../../env';
import { advance, createAccount, deliveries, grant, spend, topicWebhook, useWebhookRecorder } from '../../testing/scenario';
import { now, setTestTime } from '../../clock';
import { runDueWork } from '../../jobs/worker';
import { enqueueNotifications } from './outbox';
import { deliverDueWebhooks } from './sender';
import { deliveryIdOf } from './deliveries';
import { messageId } from './payload';
import { MAX_ATTEMPTS, MAX_DELIVERY_ATTEMPTS, RETRY_DELAYS_S } from './schedule';
import { type Receiver } from '../../testing/webhook-receiver';
import { withoutPrivateDestinations } from '../../testing/destinations';
import { systemResolver, type Resolver } from '../../net/destinations';
import { useResolver } from './send';
import { webhookAttempts, webhookDeliveries, webhooks } from '../../db/schema';
import { eq, sql } from 'drizzle-orm';
import { newId } from '../../ids';

process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
// A receiver told to hang holds its request until the test releases it, however long the
// machine takes meanwhile: no send gives up on it first. Tests of the timeout set their own.
process.env.WEBHOOK_TIMEOUT_MS = '120000';
const t = useTestDatabase();

const receiver = useWebhookRecorder();

const verify = (secret: string, req: { body: string; headers: Record<string, string> }) => new Webhook(secret).verify(req.body, req.headers);
const topics = (r: Receiver) => r.requests.map((q) => q.json.topic ?? q.json.type);

describe('delivering webhooks', () => {
  it('a balance going negative notifies each style once, with its own payload, Basic auth and a valid signature', async () => {
    const co = await newCompany(t);
    const b = await receiver();
    const a = await receiver();
    const hookB = await topicWebhook(co, b.url, ['negative_balance', 'pause_balance'], { username: 'billing', password: 'pa:ss wörd' });
    const regA = await co.call('POST', '/v1/webhooks', { body: { type: 'negative_balance', url: a.url } });
    const hookA = regA.body.data;
    const account = await createAccount(co);

    const event = (await spend(co, account, 5)).body.data;
    expect(event.balance.amount).toBe(-5);
    expect(b.requests).toHaveLength(0); // never in the request path
    await advance(0);

    expect(topics(b).sort()).toEqual(['negative_balance', 'pause_balance']);
    const listed = await deliveries(co, hookB.id);
    for (const req of b.requests) {
      expect(req.method).toBe('POST');
      expect(req.headers['content-type']).toBe('application/json');
      expect(req.headers['user-agent']).toMatch(/billing-webhooks/);
      expect(req.headers.authorization).toBe(`Basic ${Buffer.from('billing:pa:ss wörd').toString('base64')}`);
      expect(verify(hookB.secret, req)).toEqual(req.json);
      expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      expect(req.json).toEqual({ webhook_id: hookB.id, topic: req.json.topic, account_id: account, denomination: 'credits', balance: '-5' });
      expect(typeof req.json.balance).toBe('string');
      const d = listed.find((x) => x.id === req.headers['webhook-id']);
      expect(d).toMatchObject({ webhook_id: hookB.id, topic: req.json.topic, account_id: account, denomination: 'credits', status: 'succeeded', attempts: 1, next_attempt_at: null, payload: req.json });
      expect(d.attempts_log).toEqual([{ id: expect.stringMatching(/^wha_/), response_status: 200, error: null, duration_ms: expect.any(Number), created_at: expect.any(String) }]);
    }
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(b.requests[0].body, b.requests[0].headers)).toThrow();

    expect(a.requests).toHaveLength(1);
    const [reqA] = a.requests;
    expect(reqA.headers.authorization).toBeUndefined();
    expect(verify(hookA.secret, reqA)).toEqual(reqA.json);
    expect(reqA.json).toEqual({
      company_id: co.company.id,
      callback_id: reqA.headers['webhook-id'],
      account_id: account,
      type: 'negative_balance',
      account_balance: -5,
      account_denomination: 'credits',
    });
    expect(reqA.headers['webhook-id']).toMatch(/^whd_/);
    expect(typeof reqA.json.account_balance).toBe('number');
  });

  it('fires crossing notifications once per crossing', async () => {
    const co = await newCompany(t);
    const r = await receiver();
    await topicWebhook(co, r.url, ['negative_balance', 'pause_balance']);
    const account = await createAccount(co);
    await spend(co, account, 5);
    await advance(0);
    expect(topics(r).sort()).toEqual(['negative_balance', 'pause_balance']);

    await spend(co, account, 1);
    await spend(co, account, 2);
    await advance(0);
    expect(r.requests).toHaveLength(2);

    await grant(co, account, 20); // back to 12
    await advance(0);
    expect(r.requests).toHaveLength(2);
    await spend(co, account, 12.5);
    await advance(0);
    expect(topics(r).sort()).toEqual(['negative_balance', 'negative_balance', 'pause_balance', 'pause_balance']);
    expect(r.requests.filter((q) => q.json.topic === 'negative_balance').map((q) => q.json.balance)).toEqual(['-5', '-0.5']);
  });

  it('coalesces balance_change and sends the balance at send time', async () => {
    const co = await newCompany(t);
    const r = await receiver();
    const hook = await topicWebhook(co, r.url, ['balance_change']);
    const a = await receiver();
    await co.call('POST', '/v1/webhooks', { body: { type: 'balance_change', url: a.url } });
    const account = await createAccount(co);
    await grant(co, account, 10);
    await spend(co, account, 1);
    await spend(co, account, 2.25);
    await spend(co, account, 3);
    const waiting = await deliveries(co, hook.id);
    expect(waiting).toHaveLength(1);
    expect(waiting[0]).toMatchObject({ status: 'pending', attempts: 0, payload: { balance: '3.75' } });
    await advance(0);
    expect(r.requests.map((q) => q.json)).toEqual([{ webhook_id: hook.id, topic: 'balance_change', account_id: account, denomination: 'credits', balance: '3.75' }]);
    expect(a.requests.map((q) => q.json.account_balance)).toEqual([3.75]);
    // once sent, the next change queues a new one
    await spend(co, account, 0.75);
    await advance(0);
    expect(r.requests.map((q) => q.json.balance)).toEqual(['3.75', '3']);
    const done = await deliveries(co, hook.id);
    expect(done.map((d) => [d.status, d.payload.balance])).toEqual([
      ['succeeded', '3'],
      ['succeeded', '3.75'],
    ]);
  });

  it('sends a balance_change only once the one before it for the same balance is done, so the newer balance arrives last', async () => {
    const co = await newCompany(t);
    const r = await receiver(() => 'hang');
    const hook = await topicWebhook(co, r.url, ['balance_change']);
    const account = await createAccount(co);
    await grant(co, account, 10);
    const first = runDueWork(t.database.db, now());
    await r.waitFor(1);
    expect(r.requests[0].json.balance).toBe('10');
    // A change while that one is in flight: a new delivery, which waits for it.
    await spend(co, account, 4);
    const second = deliverDueWebhooks(t.database.db, now());
    await new Promise((res) => setTimeout(res, 300));
    expect(r.requests).toHaveLength(1);
    expect((await deliveries(co, hook.id)).map((d) => d.status).sort()).toEqual(['pending', 'sending']);
    r.answer(() => ({ status: 200 }));
    r.release();
    await Promise.all([first, second]);
    await r.waitFor(2);
    expect(r.requests.map((q) => q.json.balance)).toEqual(['10', '6']);
    expect((await deliveries(co, hook.id)).map((d) => d.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('of two balance_change deliveries of one balance due at once, sends the older first and the other after it', async () => {
    const co = await newCompany(t);
    const r = await receiver(() => 'hang');
    const hook = await topicWebhook(co, r.url, ['balance_change']);
    const account = await createAccount(co);
    await grant(co, account, 10);
    // The first waits for its last attempt (nothing is merged into it), so the next change queues a second.
    await t.database.db.update(webhookDeliveries).set({ attempts: MAX_ATTEMPTS - 1, nextAttemptAt: new Date(now().getTime() + 3_600_000) }).where(eq(webhookDeliveries.webhookId, hook.id));
    await spend(co, account, 4);
    expect(await deliveries(co, hook.id)).toHaveLength(2);
    // The receiver's success elsewhere pulls retries forward: both are due now.
    await t.database.db.update(webhookDeliveries).set({ nextAttemptAt: now() }).where(eq(webhookDeliveries.webhookId, hook.id));
    const [newer, older] = await deliveries(co, hook.id);
    const run = deliverDueWebhooks(t.database.db, now());
    await r.waitFor(1);
    await new Promise((res) => setTimeout(res, 300));
    expect(r.requests).toHaveLength(1);
    expect(deliveryIdOf(r.requests[0].headers['webhook-id'])).toBe(older.id);
    r.answer(() => ({ status: 200 }));
    r.release();
    await run;
    expect(r.requests).toHaveLength(2);
    expect(deliveryIdOf(r.requests[1].headers['webhook-id'])).toBe(newer.id);
    expect((await deliveries(co, hook.id)).map((d) => d.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('keeps coalescing balance_change while the receiver fails, and sends the balance once when it is back', async () => {
    const co = await newCompany(t);
    const r = await receiver(() => ({ status: 500 }));
    const hook = await topicWebhook(co, r.url, ['balance_change']);
    const account = await createAccount(co);
    await grant(co, account, 10);
    await advance(0);
    expect(r.requests).toHaveLength(1);
    // while it waits for its retry, every kind of change merges into it
    await spend(co, account, 1); // one event, one statement
    const batch = await co.call('POST', '/v1/events', { body: [1, 1].map((amount) => ({ account_id: account, type: 'q', cost_override_amount: amount, cost_override_denomination: 'credits' })) });
    expect(batch.status).toBe(200);
    await grant(co, account, 0.5);
    const waiting = await deliveries(co, hook.id);
    expect(waiting).toHaveLength(1);
    expect(waiting[0]).toMatchObject({ status: 'pending', attempts: 1, payload: { balance: '7.5' } });

    r.answer(() => ({ status: 200 }));
    await advance(30);
    expect(r.requests.map((q) => q.json.balance)).toEqual(['10', '7.5']);
    expect((await deliveries(co, hook.id)).map((d) => [d.status, d.attempts])).toEqual([['succeeded', 2]]);
  });

  it('retries failures on the schedule, attempts in order, until the receiver answers 2xx', async () => {
    const co = await newCompany(t);
    const r = await receiver((n) => ({ status: n < 2 ? 500 : 200 }));
    const hook = await topicWebhook(co, r.url, ['negative_balance']);
    const account = await createAccount(co);
    await spend(co, account, 5);
    const t0 = await advance(0);
    expect(r.requests).toHaveLength(1);
    let [d] = await deliveries(co, hook.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, next_attempt_at: new Date(t0.getTime() + 30_000).toISOString() });
    expect(d.attempts_log).toMatchObject([{ response_status: 500, error: null }]);

    await advance(29);
    expect(r.requests).toHaveLength(1);
    await advance(1);
    expect(r.requests).toHaveLength(2);
    [d] = await deliveries(co, hook.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 2, next_attempt_at: new Date(t0.getTime() + 150_000).toISOString() });

    await advance(3600);
    expect(r.requests).toHaveLength(3);
    [d] = await deliveries(co, hook.id);
    expect(d).toMatchObject({ status: 'succeeded', attempts: 3, next_attempt_at: null });
    expect(d.attempts_log.map((x: any) => x.response_status)).toEqual([500, 500, 200]);
    expect(d.attempts_log.map((x: any) => (new Date(x.created_at).getTime() - t0.getTime()) / 1000)).toEqual([0, 30, 150]);
    // the same message each time: one webhook-id, each attempt freshly signed
    expect(new Set(r.requests.map((q) => q.headers['webhook-id']))).toEqual(new Set([d.id]));
    for (const q of r.requests) expect(verify(hook.secret, q)).toEqual(d.payload);
  });

  it('gives up after about a day of retries, and a failed delivery can be re-sent by API', async () => {
    const co = await newCompany(t);
    const r = await receiver(() => ({ status: 503 }));
    const hook = await topicWebhook(co, r.url, ['pause_balance']);
    const account = await createAccount(co);
    await spend(co, account, 1);
    const t0 = await advance(0);
    await advance(2 * 86400);
    let [d] = await deliveries(co, hook.id);
    expect(d).toMatchObject({ status: 'failed', attempts: 10, next_attempt_at: null });
    const offsets = d.attempts_log.map((x: any) => (new Date(x.created_at).getTime() - t0.getTime()) / 1000);
    const expected = [0];
    for (const delay of RETRY_DELAYS_S) expected.push(expected[expected.length - 1] + delay);
    expect(offsets).toEqual(expected);
    expect(expected[expected.length - 1]).toBeGreaterThan(20 * 3600);
    expect(expected[expected.length - 1]).toBeLessThan(26 * 3600);
    expect(r.requests).toHaveLength(10);

    r.answer(() => ({ status: 204 }));
    const retried = await co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body.data).toMatchObject({ id: d.id, status: 'succeeded', attempts: 11 });
    expect(retried.body.data.attempts_log).toHaveLength(11);
    expect(retried.body.data.attempts_log[10]).toMatchObject({ response_status: 204, error: null });
    expect(r.requests).toHaveLength(11);
    [d] = await deliveries(co, hook.id);
    expect(d.status).toBe('succeeded');
  });

  it('replays a succeeded delivery on request, with the same webhook-id', async () => {
    const co = await newCompany(t);
    const r = await receiver();
    const hook = await topicWebhook(co, r.url, ['negative_balance']);
    const account = await createAccount(co);
    await spend(co, account, 2);
    await advance(0);
    const [d] = await deliveries(co, hook.id);
    const again = await co.call('POST', `/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`);
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: d.id, status: 'succeeded', attempts: 2 });
    expect(again.body.data.attempts_log.map((x: any) => x.response_status)).toEqual([200, 200]);
    expect(r.requests.map((q) => q.headers['webhook-id'])).toEqual([d.id, d.id]);
    expect(r.requests[1].json).toEqual(r.requests[0].json);
    const one = await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}`);
    expect(one.body.data).toEqual(again.body.data);
  });

  it('gives a balance_change retried with a newer balance a new webhook-id, and keeps it while the balance stays', async () => {
    const co = await newCompany(t);
    const r = await receiver((n) => ({ status: n < 2 ? 500 : 200 }));
    const hook = await topicWebhook(co, r.url, ['balance_change']);
    const account = await createAccount(co);
    await spend(co, account, 5);
    await advance(0);
    await advance(30);
    // A change while the delivery waits for its retry: it joins it, and the retry carries it.
    await spend(co, account, 3);
    await advance(120);
    const [d] = await deliveries(co, hook.id);
    expect(d).toMatchObject({ status: 'succeeded', attempts: 3 });
    const again = await co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`);
    expect(again.status).toBe(200);
    expect(r.requests.map((q) => [q.headers['webhook-id'], q.json.balance])).toEqual([
      [d.id, '-5'],
      [d.id, '-5'],
      [`${d.id}_r3`, '-8'],
      [`${d.id}_r3`, '-8'],
    ]);
    for (const q of r.requests) expect(verify(hook.secret, q)).toEqual(q.json);
    // The delivery endpoints take the id a receiver got.
    const byMessage = await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}_r3`);
    expect(byMessage.status, JSON.stringify(byMessage.body)).toBe(200);
    expect(byMessage.body.data.id).toBe(d.id);
  });

  it('keeps a balance_change\'s webhook-id across an attempt that could not be prepared', async () => {
    const co = await newCompany(t);
    const r = await receiver((n) => ({ status: n < 1 ? 500 : 200 }));
    const hook = await topicWebhook(co, r.url, ['balance_change']);
    const [row] = await t.database.db.select({ secretEnc: webhooks.secretEnc }).from(webhooks).where(eq(webhooks.id, hook.id));
    // An attempt fails before anything is sent while the webhook's secret cannot be read.
    const unreadable = async (on: boolean) =>
      t.database.db.update(webhooks).set({ secretEnc: on ? 'not-a-sealed-secret' : row.secretEnc }).where(eq(webhooks.id, hook.id));
    const account = await createAccount(co);

    // The first attempt is never sent, the second is: it is the message's first, under the delivery's id.
    await unreadable(true);
    await spend(co, account, 5);
    await advance(0);
    expect(r.requests).toHaveLength(0);
    await unreadable(false);
    await advance(30);
    // Refused (500); the third attempt cannot be prepared; the fourth carries the same balance again.
    await unreadable(true);
    await advance(120);
    await unreadable(false);
    await advance(600);
    const [d] = await deliveries(co, hook.id);
    expect(d).toMatchObject({ status: 'succeeded', attempts: 4 });
    expect(d.attempts_log.map((a: any) => [a.response_status, a.error])).toEqual([
      [null, 'connection_failed'],
      [500, null],
      [null, 'connection_failed'],
      [200, null],
    ]);
    expect(r.requests.map((q) => [q.headers['webhook-id'], q.json.balance])).toEqual([
      [d.id, '-5'],
      [d.id, '-5'],
    ]);
    for (const q of r.requests) expect(verify(hook.secret, q)).toEqual(q.json);
  });

  it('does not merge a balance change into a delivery waiting for its last attempt', async () => {
    const co = await newCompany(t);
    const r = await receiver(() => ({ status: 500 }));
    const hook = await topicWebhook(co, r.url, ['balance_change']);
    const account = await createAccount(co);
    await spend(co, account, 5);
    await advance(0);
    for (const delay of RETRY_DELAYS_S.slice(0, -1)) await advance(delay);
    const [first] = await deliveries(co, hook.id);
    expect(first).toMatchObject({ status: 'pending', attempts: RETRY_DELAYS_S.length });

    // A change now gets a delivery of its own: the waiting one has a single attempt left.
    await spend(co, account, 3);
    await advance(RETRY_DELAYS_S[RETRY_DELAYS_S.length - 1]);
    const after = await deliveries(co, hook.id);
    expect(after.find((d) => d.id === first.id)).toMatchObject({ status: 'failed', attempts: RETRY_DELAYS_S.length + 1 });
    const second = after.find((d) => d.id !== first.id);
    expect(second).toMatchObject({ topic: 'balance_change', status: 'pending' });

    // The receiver is back: the newer balance reaches it.
    r.answer(() => ({ status: 200 }));
    await advance(RETRY_DELAYS_S[second.attempts - 1]);
    expect((await deliveries(co, hook.id)).find((d) => d.id === second.id)).toMatchObject({ status: 'succeeded' });
    expect(r.requests.at(-1)!.json.balance).toBe('-8');
  });

  it('merges a balance change into a delivery still waiting for a retry before its last', async () => {
    const co = await newCompany(t);
    const r = await receiver(() => ({ status: 500 }));
    const hook = await topicWebhook(co, r.url, ['balance_change']);
    const account = await createAccount(co);
    await spend(co, account, 5);
    for (const delay of [0, ...RETRY_DELAYS_S.slice(0, -2)]) await advance(delay);
    await spend(co, account, 3);
    const [only, ...none] = await deliveries(co, hook.id);
    expect(none).toEqual([]);
    expect(only).toMatchObject({ status: 'pending', attempts: RETRY_DELAYS_S.length - 1 });
  });

  it('names each attempt of a balance_change by the message it carries', () => {
    const id = 'whd_01m8ddea94zcwcm5b2fkv3xtqj_19f5f2ed';
    const sent = (balance: string, attempt: number, as = id) => ({ balance, sent: { id: as, balance, attempt } });
    // Other topics (no live balance), and a first attempt: the delivery id.
    expect(messageId({ id, attempts: 3, payload: {} }, null)).toBe(id);
    expect(messageId({ id, attempts: 1, payload: { balance: '5' } }, '4')).toBe(id);
    // The attempt before carried the same balance: the same message.
    expect(messageId({ id, attempts: 2, payload: sent('4', 1) }, '4')).toBe(id);
    expect(messageId({ id, attempts: 4, payload: sent('4', 3, `${id}_r3`) }, '4')).toBe(`${id}_r3`);
    // Another balance, or an attempt before it that was never logged (its process died): a new one.
    expect(messageId({ id, attempts: 2, payload: sent('4', 1) }, '3')).toBe(`${id}_r2`);
    expect(messageId({ id, attempts: 3, payload: sent('4', 1) }, '4')).toBe(`${id}_r3`);
    expect(messageId({ id, attempts: 2, payload: { balance: '4' } }, '4')).toBe(`${id}_r2`);
    // The attempt before sent nothing (it could not be prepared): the id it would have used.
    expect(messageId({ id, attempts: 2, payload: { sent: { id, balance: null, attempt: 1 } } }, '4')).toBe(id);
    expect(messageId({ id, attempts: 5, payload: { balance: '4', sent: { id: `${id}_r3`, balance: '4', attempt: 4 } } }, '4')).toBe(`${id}_r3`);
    expect(deliveryIdOf(`${id}_r12`)).toBe(id);
    expect(deliveryIdOf(id)).toBe(id);
  });

  it('keeps a succeeded delivery succeeded when its replay fails, and does not retry it', async () => {
    const co = await newCompany(t);
    const r = await receiver((n) => ({ status: n === 0 ? 200 : 500 }));
    const hook = await topicWebhook(co, r.url, ['negative_balance']);
    const account = await createAccount(co);
    await spend(co, account, 2);
    await advance(0);
    const [d] = await deliveries(co, hook.id);
    const again = await co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`);
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: d.id, status: 'succeeded', attempts: 2, next_attempt_at: null });
    expect(again.body.data.attempts_log.map((x: any) => x.response_status)).toEqual([200, 500]);
    await advance(86400);
    expect(r.requests).toHaveLength(2);
    // What a replay whose process died after its claim leaves: the worker takes it over when its
    // lease runs out, and its failure leaves the delivery succeeded too.
    await t.database.db
      .update(webhookDeliveries)
      .set({ status: 'sending', nextAttemptAt: now(), payload: sql`payload || '{"delivered": true}'::jsonb` })
      .where(eq(webhookDeliveries.id, d.id));
    await advance(1);
    expect(r.requests).toHaveLength(3);
    const [after] = await deliveries(co, hook.id);
    expect(after).toMatchObject({ status: 'succeeded', attempts: 3, next_attempt_at: null });
    // The mark goes with the attempt: the delivery is an ordinary succeeded one again.
    const [row] = await t.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, d.id));
    expect(row.payload).not.toHaveProperty('delivered');
    const missing = await co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/whd_nope/retry`);
    expect(missing.status).toBe(404);
  });

  it('re-sends one delivery at most MAX_DELIVERY_ATTEMPTS times in all, and pages its attempt log', async () => {
    const co = await newCompany(t);
    const r = await receiver((n) => ({ status: n % 2 === 0 ? 200 : 500 }));
    const hook = await topicWebhook(co, r.url, ['negative_balance']);
    const account = await createAccount(co);
    await spend(co, account, 2);
    await advance(0);
    const [d] = await deliveries(co, hook.id);
    const resend = (id = d.id) => co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${id}/retry`);
    for (let n = 2; n <= MAX_DELIVERY_ATTEMPTS; n++) {
      const again = await resend();
      expect(again.status).toBe(200);
      expect(again.body.data.attempts).toBe(n);
    }
    const refused = await resend();
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ type: 'conflict', param: 'delivery_id', request_id: expect.stringMatching(/^req_/) });
    expect(refused.body.error.message).toContain(`${MAX_DELIVERY_ATTEMPTS} attempts`);
    // The `_r<attempt>` form of its id is the same delivery, and refused too.
    expect((await resend(`${d.id}_r3`)).status).toBe(409);
    expect(r.requests).toHaveLength(MAX_DELIVERY_ATTEMPTS);
    const [after] = await deliveries(co, hook.id);
    expect(after).toMatchObject({ status: 'succeeded', attempts: MAX_DELIVERY_ATTEMPTS });
    expect(after.attempts_log).toHaveLength(MAX_DELIVERY_ATTEMPTS);

    // The attempt log, newest first, a page at a time.
    const base = `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/attempts`;
    const newestFirst = [...after.attempts_log].reverse().map((a: any) => a.id);
    const first = await co.call('GET', `${base}?limit=7`);
    expect(first.status).toBe(200);
    expect(first.body.has_more).toBe(true);
    expect(first.body.data).toEqual([...after.attempts_log].reverse().slice(0, 7));
    expect(first.headers.get('link')).toContain(`starting_after=${newestFirst[6]}`);
    const seen: string[] = first.body.data.map((a: any) => a.id);
    let next = seen.at(-1);
    while (next) {
      const page = await co.call('GET', `${base}?limit=7&starting_after=${next}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((a: any) => a.id));
      next = page.body.has_more ? seen.at(-1) : undefined;
    }
    expect(seen).toEqual(newestFirst);
    expect((await co.call('GET', `${base}?limit=1001`)).body.error).toMatchObject({ type: 'invalid_request', param: 'limit' });
    // Another company's delivery, or none: 404.
    const other = await newCompany(t);
    const foreign = await other.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/attempts`);
    expect(foreign.status).toBe(404);
    expect((await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/whd_nope/attempts`)).status).toBe(404);
  });

  it('sends nothing for a change that rolled back', async () => {
    const co = await newCompany(t);
    const r = await receiver();
    const hook = await topicWebhook(co, r.url, ['negative_balance', 'threshold']);
    const account = await createAccount(co);
    await expect(
      t.database.db.transaction(async (tx) => {
        await enqueueNotifications(tx, co.company.id, [{ accountId: account, denomination: 'credits', topic: 'negative_balance', balance: '-1' }], now());
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    await advance(0);
    expect(await deliveries(co, hook.id)).toEqual([]);
    expect(r.requests).toHaveLength(0);
    // the same notification committed goes out, with its detail under `data`
    await enqueueNotifications(t.database.db, co.company.id, [{ accountId: account, denomination: 'credits', topic: 'threshold', balance: '2', detail: { reason: 'refill_threshold', threshold: '3' } }], now());
    await advance(0);
    expect(r.requests.map((q) => q.json)).toEqual([
      { webhook_id: hook.id, topic: 'threshold', account_id: account, denomination: 'credits', balance: '2', data: { reason: 'refill_threshold', threshold: '3' } },
    ]);
  });

  it('two workers running at once send each delivery exactly once', async () => {
    const co = await newCompany(t);
    const r = await receiver();
    r.answer(() => ({ status: 200 }));
    await topicWebhook(co, r.url, ['negative_balance']);
    const other = await receiver();
    await topicWebhook(co, other.url, ['negative_balance']);
    const items = Array.from({ length: 30 }, (_, i) => ({ accountId: `a_fake${i}`, denomination: 'credits', topic: 'negative_balance' as const, balance: '-1' }));
    await enqueueNotifications(t.database.db, co.company.id, items, now());
    const at = now();
    const [x, y, z] = await Promise.all([runDueWork(t.database.db, at), runDueWork(t.database.db, at), deliverDueWebhooks(t.database.db, at)]);
    expect(x + y + z).toBeGreaterThanOrEqual(60);
    for (const rec of [r, other]) {
      expect(rec.requests).toHaveLength(30);
      expect(new Set(rec.requests.map((q) => q.headers['webhook-id'])).size).toBe(30);
    }
  });

  it("re-sends fired at once take the webhook's send slots: past its limit, 429 with Retry-After", async () => {
    const co = await newCompany(t);
    const slow = await receiver(() => 'hang');
    const hook = await topicWebhook(co, slow.url, ['negative_balance']);
    const items = Array.from({ length: 5 }, (_, i) => ({ accountId: `a_fake${i}`, denomination: 'credits', topic: 'negative_balance' as const, balance: '-1' }));
    await enqueueNotifications(t.database.db, co.company.id, items, now());
    const queued = await deliveries(co, hook.id);
    expect(queued).toHaveLength(5);
    const calls = queued.map((d) => co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`));
    await slow.waitFor(4);
    await new Promise((r) => setTimeout(r, 300));
    // Four at once reach the receiver (the webhook's limit); the fifth is refused, not sent.
    expect(slow.requests).toHaveLength(4);
    slow.answer(() => ({ status: 200 }));
    slow.release();
    const answers = await Promise.all(calls);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 429]);
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused.body.error).toMatchObject({ type: 'rate_limited', param: 'delivery_id' });
    expect(refused.headers.get('retry-after')).toBe('1');
    // The slots are given back: the refused one goes out now.
    const last = queued[answers.indexOf(refused)];
    const again = await co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${last.id}/retry`);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(slow.requests).toHaveLength(5);
  });

  it('a hanging receiver neither delays recording events nor holds up other webhooks', async () => {
    const co = await newCompany(t);
    const slow = await receiver(() => 'hang');
    const fast = await receiver();
    const slowHook = await topicWebhook(co, slow.url, ['negative_balance']);
    const fastHook = await topicWebhook(co, fast.url, ['balance_change']);
    const account = await createAccount(co);
    await spend(co, account, 1);
    // balance_change was queued too; let it go out first so the fast receiver starts empty
    const worker = runDueWork(t.database.db, now());
    await slow.waitFor(1);
    await fast.waitFor(1);
    expect(slow.requests[0].answered).toBe(false);
    // in flight: shown as `sending` (next_attempt_at is its lease), and not re-sendable just now
    const [inFlight] = await deliveries(co, slowHook.id);
    expect(inFlight).toMatchObject({ status: 'sending', attempts: 1, attempts_log: [] });
    const busy = await co.call('POST', `/v1/companies/{company}/webhooks/${slowHook.id}/deliveries/${inFlight.id}/retry`);
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ type: 'conflict', param: 'delivery_id' });

    for (let i = 0; i < 20; i++) await spend(co, account, 0.5);
    const batch = await co.call('POST', '/v1/events', { body: Array.from({ length: 50 }, () => ({ account_id: account, type: 'q', cost_override_amount: 0.1, cost_override_denomination: 'credits' })) });
    expect(batch.status).toBe(200);
    // every event was recorded while the hanging request is still unanswered
    expect(slow.requests[0].answered).toBe(false);
    expect((await co.call('GET', `/v1/accounts/${account}/balance/credits`)).body.data.amount).toBe(-16);
    // and the other webhook's next delivery went out meanwhile, from the same worker run
    await fast.waitFor(2);
    expect(slow.requests[0].answered).toBe(false);
    expect(fast.requests[1].json).toMatchObject({ webhook_id: fastHook.id, topic: 'balance_change' });

    slow.release();
    await worker;
    expect(slow.requests).toHaveLength(1);
  });

  it('two hanging receivers with many deliveries waiting still leave room for the others', async () => {
    const co = await newCompany(t);
    const hanging = [await receiver(() => 'hang'), await receiver(() => 'hang')];
    for (const h of hanging) await topicWebhook(co, h.url, ['negative_balance']);
    for (let i = 0; i < 6; i++) await spend(co, await createAccount(co), 1);
    // the healthy receiver's delivery (another company's) is due a second after all twelve of theirs
    setTestTime(now().getTime() + 1000);
    const other = await newCompany(t, { name: 'Other' });
    const fast = await receiver();
    await topicWebhook(other, fast.url, ['negative_balance']);
    await spend(other, await createAccount(other), 1);

    const worker = runDueWork(t.database.db, now());
    await fast.waitFor(1);
    for (const h of hanging) {
      expect(h.requests.length).toBeGreaterThan(0);
      expect(h.requests.every((q) => !q.answered)).toBe(true);
    }
    for (const h of hanging) {
      h.answer(() => ({ status: 200 }));
      h.release();
    }
    await worker;
    for (const h of hanging) expect(h.requests).toHaveLength(6);
    expect(fast.requests).toHaveLength(1);
  });

  it('counts no answer within the timeout as a failed attempt', underSettings({ WEBHOOK_TIMEOUT_MS: '300' }, async () => {
    const co = await newCompany(t);
    const r = await receiver(() => 'hang');
    const hook = await topicWebhook(co, r.url, ['negative_balance']);
    const account = await createAccount(co);
    await spend(co, account, 1);
    const started = performance.now();
    const t0 = await advance(0);
    const took = performance.now() - started;
    const [d] = await deliveries(co, hook.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, next_attempt_at: new Date(t0.getTime() + 30_000).toISOString() });
    expect(d.attempts_log).toMatchObject([{ response_status: null, error: 'timeout' }]);
    // It waited the timeout, and no longer than the whole run of the worker took.
    expect(d.attempts_log[0].duration_ms).toBeGreaterThanOrEqual(250);
    expect(d.attempts_log[0].duration_ms).toBeLessThanOrEqual(took);
  }));

  it('does not follow redirects, and logs them and unreachable receivers with coarse errors only', async () => {
    const co = await newCompany(t);
    const target = await receiver();
    const r = await receiver(() => ({ status: 302, headers: { location: `${target.url}?secret-place` } }));
    const hook = await topicWebhook(co, r.url, ['negative_balance']);
    const closed = await receiver();
    const closedUrl = closed.url;
    await closed.close();
    const dead = await topicWebhook(co, closedUrl, ['negative_balance']);
    const account = await createAccount(co);
    await spend(co, account, 1);
    await advance(0);
    expect(r.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
    const [d] = await deliveries(co, hook.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1 });
    // a 3xx is just its status: where it pointed is neither followed nor shown
    expect(d.attempts_log[0]).toMatchObject({ response_status: 302, error: null });
    const [x] = await deliveries(co, dead.id);
    expect(x).toMatchObject({ status: 'pending', attempts: 1 });
    expect(x.attempts_log[0]).toMatchObject({ response_status: null, error: 'connection_failed' });
    // the re-send answer says no more
    const again = await co.call('POST', `/v1/companies/{company}/webhooks/${dead.id}/deliveries/${x.id}/retry`);
    expect(again.body.data.attempts_log.map((a: any) => a.error)).toEqual(['connection_failed', 'connection_failed']);
    const resent = await co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`);
    expect(resent.body.data.attempts_log.map((a: any) => [a.response_status, a.error])).toEqual([
      [302, null],
      [302, null],
    ]);
    for (const text of [JSON.stringify(await deliveries(co, hook.id)), JSON.stringify(resent.body), JSON.stringify(again.body)]) {
      expect(text).not.toContain('secret-place');
      expect(text).not.toMatch(/location|ECONNREFUSED|127\.0\.0\.1/i);
    }
    expect(target.requests).toHaveLength(0);
  });

  it('a receiver back from an outage gets its waiting retries at once', async () => {
    const co = await newCompany(t);
    const r = await receiver(() => ({ status: 500 }));
    const hook = await topicWebhook(co, r.url, ['negative_balance']);
    const first = await createAccount(co);
    await spend(co, first, 1);
    await advance(0);
    await advance(30 + 120 + 600); // four failures so far; the next retry is 30 minutes away
    expect(r.requests).toHaveLength(4);
    r.answer(() => ({ status: 200 }));
    const second = await createAccount(co);
    await spend(co, second, 1);
    await advance(0);
    expect(r.requests).toHaveLength(6);
    const list = await deliveries(co, hook.id);
    expect(list.map((d) => [d.account_id, d.status, d.attempts])).toEqual([
      [second, 'succeeded', 1],
      [first, 'succeeded', 5],
    ]);
    expect(list[1].attempts_log.map((x: any) => x.response_status)).toEqual([500, 500, 500, 500, 200]);
    const page = await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries?limit=1&status=succeeded`);
    expect(page.body.data.map((d: any) => d.id)).toEqual([list[0].id]);
    expect(page.headers.get('link')).toContain(`starting_after=${list[0].id}`);
    const rest = await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries?starting_after=${list[0].id}`);
    expect(rest.body.data.map((d: any) => d.id)).toEqual([list[1].id]);
    expect((await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries?status=pending`)).body.data).toEqual([]);
  });

  it('deleting a webhook cancels what it still had to send', async () => {
    const co = await newCompany(t);
    const r = await receiver(() => ({ status: 500 }));
    const hook = await topicWebhook(co, r.url, ['negative_balance']);
    const account = await createAccount(co);
    await spend(co, account, 1);
    await advance(0);
    expect(r.requests).toHaveLength(1);
    expect((await co.call('DELETE', `/v1/companies/{company}/webhooks/${hook.id}`)).status).toBe(200);
    await advance(3600);
    expect(r.requests).toHaveLength(1);
  });
});

describe('webhook destinations', () => {
  /** Answers `address` for every name under `.example.test` (no DNS, no internet), the system's answer otherwise. */
  function resolving(address: string, failing: string[] = []): Resolver {
    return async (host, family) => {
      if (failing.includes(host)) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', syscall: 'getaddrinfo', hostname: host });
      if (host.endsWith('.example.test')) return [{ address, family: address.includes(':') ? 6 : 4 }];
      return systemResolver(host, family);
    };
  }

  it('a name that resolves inside the network is refused when the send connects, and nothing is sent', async () => {
    const co = await newCompany(t);
    const r = await receiver();
    const restore = useResolver(resolving('127.0.0.1'));
    try {
      await withoutPrivateDestinations(async () => {
        // a name is not judged at registration: it may resolve elsewhere by the time of a send
        const hook = await topicWebhook(co, `http://hooks.example.test:${r.port}/hook`, ['negative_balance'], { username: 'u', password: 'p' });
        const account = await createAccount(co);
        await spend(co, account, 1);
        await advance(0);
        let [d] = await deliveries(co, hook.id);
        expect(d).toMatchObject({ status: 'pending', attempts: 1 });
        expect(d.attempts_log).toMatchObject([{ response_status: null, error: 'destination_not_allowed' }]);
        const again = await co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`);
        expect(again.body.data.attempts_log.map((a: any) => a.error)).toEqual(['destination_not_allowed', 'destination_not_allowed']);
        expect(r.requests).toHaveLength(0);

        // the same name answering with the IPv4-mapped or IPv6 loopback is refused as well
        useResolver(resolving('::ffff:127.0.0.1'));
        expect((await co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`)).body.data.attempts_log[2].error).toBe('destination_not_allowed');
        useResolver(resolving('::1'));
        expect((await co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`)).body.data.attempts_log[3].error).toBe('destination_not_allowed');
        expect(r.requests).toHaveLength(0);

        // where private destinations are allowed, the same name reaches the receiver it resolves to
        useResolver(resolving('127.0.0.1'));
        const sent = await withSettings({ WEBHOOK_ALLOW_PRIVATE: '1' }, () => co.call('POST', `/v1/companies/{company}/webhooks/${hook.id}/deliveries/${d.id}/retry`));
        expect(sent.body.data).toMatchObject({ status: 'succeeded' });
        expect(r.requests).toHaveLength(1);
        expect(r.requests[0].headers.host).toBe(`hooks.example.test:${r.port}`);
        [d] = await deliveries(co, hook.id);
        expect(d.attempts_log.map((a: any) => a.error)).toEqual(['destination_not_allowed', 'destination_not_allowed', 'destination_not_allowed', 'destination_not_allowed', null]);
      });
    } finally {
      restore();
    }
  });

  it('a literal address inside the network stored before the rule is refused at send time', async () => {
    const co = await newCompany(t);
    const r = await receiver();
    // registered where private destinations were allowed
    const hook = await topicWebhook(co, r.url.replace('127.0.0.1', '2130706433'), ['negative_balance']);
    const v6 = await topicWebhook(co, r.url.replace('127.0.0.1', '[::ffff:7f00:1]'), ['negative_balance']);
    await withoutPrivateDestinations(async () => {
      await spend(co, await createAccount(co), 1);
      await advance(0);
      for (const w of [hook, v6]) expect((await deliveries(co, w.id))[0].attempts_log).toMatchObject([{ response_status: null, error: 'destination_not_allowed' }]);
      expect(r.requests).toHaveLength(0);
    });
  });

  it('names that do not resolve, and TLS that fails, are logged as such', async () => {
    const co = await newCompany(t);
    const plain = await receiver();
    const restore = useResolver(resolving('127.0.0.1', ['nowhere.example.test']));
    try {
      const lost = await topicWebhook(co, 'https://nowhere.example.test/hook', ['negative_balance']);
      const tls = await topicWebhook(co, `https://127.0.0.1:${plain.port}/hook`, ['negative_balance']);
      await spend(co, await createAccount(co), 1);
      await advance(0);
      expect((await deliveries(co, lost.id))[0].attempts_log).toMatchObject([{ response_status: null, error: 'dns_failed' }]);
      expect((await deliveries(co, tls.id))[0].attempts_log).toMatchObject([{ response_status: null, error: 'tls_failed' }]);
      expect(plain.requests).toHaveLength(0);
    } finally {
      restore();
    }
  });

  it('attempts logged with raw network errors show only their kind', async () => {
    const co = await newCompany(t);
    const r = await receiver(() => ({ status: 500 }));
    const hook = await topicWebhook(co, r.url, ['negative_balance']);
    await spend(co, await createAccount(co), 1);
    await advance(0);
    const [d] = await deliveries(co, hook.id);
    const raw = [
      'redirect not followed (Location: http://10.0.0.7:8500/v1/agent)',
      'no answer within 10000 ms',
      'ECONNREFUSED: connect ECONNREFUSED 10.0.0.5:5432',
      'ENOTFOUND: getaddrinfo ENOTFOUND db.internal',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate',
      'ECONNRESET: read ECONNRESET',
    ];
    const at = now();
    await t.database.db.insert(webhookAttempts).values(raw.map((error, i) => ({ id: newId('wha'), deliveryId: d.id, responseStatus: i === 0 ? 307 : null, error, durationMs: 5, createdAt: new Date(at.getTime() + i + 1) })));
    const [shown] = await deliveries(co, hook.id);
    expect(shown.attempts_log.map((a: any) => [a.response_status, a.error])).toEqual([
      [500, null],
      [307, null],
      [null, 'timeout'],
      [null, 'connection_failed'],
      [null, 'dns_failed'],
      [null, 'tls_failed'],
      [null, 'connection_failed'],
    ]);
    expect(JSON.stringify(shown)).not.toMatch(/10\.0\.0|db\.internal|Location/);
  });
});

describe('sharing the sender', () => {
  it("one company's many slow receivers do not delay another company's delivery", async () => {
    const noisy = await newCompany(t, { name: 'Noisy' });
    const slow = await receiver(() => 'hang');
    for (let i = 0; i < 20; i++) await topicWebhook(noisy, `${slow.url}?n=${i}`, ['negative_balance']);
    const accounts = Array.from({ length: 4 }, (_, i) => ({ accountId: `a_noisy${i}`, denomination: 'credits', topic: 'negative_balance' as const, balance: '-1' }));
    await enqueueNotifications(t.database.db, noisy.company.id, accounts, now());
    // the quiet company's delivery is due after all eighty of theirs
    setTestTime(now().getTime() + 1000);
    const quiet = await newCompany(t, { name: 'Quiet' });
    const fast = await receiver();
    await topicWebhook(quiet, fast.url, ['negative_balance']);
    await enqueueNotifications(t.database.db, quiet.company.id, [{ accountId: 'a_quiet', denomination: 'credits', topic: 'negative_balance', balance: '-1' }], now());

    const worker = runDueWork(t.database.db, now());
    // It goes out while every one of the noisy company's sends is still held by its receiver.
    await fast.waitFor(1);
    expect(slow.requests.length).toBeGreaterThan(0);
    expect(slow.requests.every((q) => !q.answered)).toBe(true);
    // the noisy company holds its share of the sender and no more
    await slow.waitFor(8);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(slow.requests).toHaveLength(8);
    expect(slow.requests.every((q) => !q.answered)).toBe(true);

    slow.answer(() => ({ status: 200 }));
    slow.release();
    await worker;
    expect(slow.requests).toHaveLength(80);
  });

  // Slow is more than half the timeout (1.5 s): an answer held 1.6 s always is, however busy the
  // machine, and the timeout leaves it 1.4 s; a prompt one (0.3 s) has 1.2 s to spare.
  it('a receiver that answers slowly gets one send at a time until it answers promptly again', underSettings({ WEBHOOK_TIMEOUT_MS: '3000' }, async () => {
    const co = await newCompany(t);
    const r = await receiver(() => ({ status: 200, delayMs: 1600 }));
    await topicWebhook(co, r.url, ['negative_balance']);
    const batch = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ accountId: `a_${prefix}${i}`, denomination: 'credits', topic: 'negative_balance' as const, balance: '-1' }));
    await enqueueNotifications(t.database.db, co.company.id, batch('slow', 7), now());
    await runDueWork(t.database.db, now());
    expect(r.requests).toHaveLength(7);
    const q = r.requests;
    // unknown at first: four at once, the webhook's usual limit
    for (const x of q.slice(1, 4)) expect(x.at).toBeLessThan(q[0].answeredAt!);
    // each took more than half the timeout: from then on one at a time
    for (let i = 5; i < 7; i++) expect(q[i].at).toBeGreaterThanOrEqual(q[i - 1].answeredAt!);

    r.answer(() => ({ status: 200, delayMs: 300 }));
    await enqueueNotifications(t.database.db, co.company.id, batch('prompt', 9), now());
    await runDueWork(t.database.db, now());
    const next = r.requests.slice(7);
    expect(next).toHaveLength(9);
    // the first prompt answer lifts the limit: sends overlap again
    const overlapping = next.filter((x, i) => next.some((y, j) => j !== i && y.at < x.answeredAt! && x.at < y.answeredAt!));
    expect(overlapping.length).toBeGreaterThanOrEqual(4);
  }));
});

describe("a success to a webhook and its other deliveries' retries", () => {
  it('pulls each waiting retry forward once, so a delivery the receiver keeps refusing is not sent again after every success', async () => {
    const co = await newCompany(t);
    const r = await receiver((_n, req) => ({ status: (req.json as { topic: string }).topic === 'negative_balance' ? 500 : 200 }));
    const hook = await topicWebhook(co, r.url, ['negative_balance', 'balance_change']);
    const account = await createAccount(co);
    await grant(co, account, 1);
    await advance(0);
    // The receiver refuses negative_balance: its first attempt failed, the next is 30 s away (or
    // it was pulled forward once already by the balance_change that succeeded beside it).
    await spend(co, account, 2);
    await advance(0);
    const refused = (await deliveries(co, hook.id)).find((d) => d.topic === 'negative_balance');
    expect(refused.status).toBe('pending');
    // balance_change deliveries succeed meanwhile, again and again.
    for (let i = 0; i < 5; i++) {
      await grant(co, account, 1);
      await advance(1);
    }
    // Pulled forward by the first success, refused again, then back on its schedule.
    const still = (await deliveries(co, hook.id)).find((d) => d.id === refused.id);
    expect(still).toMatchObject({ status: 'pending', attempts: 2 });
    expect(topics(r).filter((x) => x === 'negative_balance')).toHaveLength(2);

    // A receiver that could not be reached at all gets its backlog once it answers again.
    const down = await receiver();
    const hook2 = await topicWebhook(co, down.url, ['balance_change']);
    await down.close();
    const [x, y] = [await createAccount(co), await createAccount(co)];
    await grant(co, x, 1);
    await advance(0);
    await advance(20);
    await grant(co, y, 1);
    await advance(0);
    // Both failed once, unanswered: x is due again 30 s after its attempt, y 20 s later.
    expect((await deliveries(co, hook2.id)).map((d) => [d.account_id, d.status, d.attempts])).toEqual([
      [y, 'pending', 1],
      [x, 'pending', 1],
    ]);
    // Back up on the same port: x's retry succeeds and pulls y's forward.
    const up = await receiver(undefined, down.port);
    await advance(11);
    await advance(0);
    expect((await deliveries(co, hook2.id)).map((d) => [d.account_id, d.status, d.attempts])).toEqual([
      [y, 'succeeded', 2],
      [x, 'succeeded', 2],
    ]);
    expect(up.requests.map((q) => (q.json as { account_id: string }).account_id)).toEqual([x, y]);
  });
});
