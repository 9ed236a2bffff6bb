import fs from 'node:fs';
import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgres, query, sql } from '../lib/db/client';
import { deliveryIdOf } from '../lib/billing/webhooks/deliveries';
import { startLocalStripe, type LocalStripeServer } from '../local-stripe/server';
import { startReceiver, type Receiver } from '../lib/testing/webhook-receiver';
import { assembleImage, migratedPostgresDatabase, startServer, waitFor, type Proc } from '../lib/testing/image';

const onPostgres = process.env.TEST_DB === 'postgres';
const ADMIN = 'shutdown-admin-token';

type Outcome = { key: string; status?: number; error?: string; close?: boolean; sentAt: number };

/**
 * One request on a connection of its own, asking to keep it alive (as a pooling client would): a
 * response (status, and whether the server said it closes the connection), or the connection's
 * error before any response.
 */
function post(url: string, path: string, auth: string, body: unknown): Promise<{ status?: number; text?: string; error?: string; close?: boolean }> {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body);
    const req = http.request(`${url}${path}`, {
      method: 'POST',
      agent: false,
      headers: { authorization: auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), connection: 'keep-alive' },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode, text, close: res.headers.connection === 'close' });
      });
      res.on('error', (err) => resolve({ status: res.statusCode, error: `after the response began: ${(err as NodeJS.ErrnoException).code ?? err.message}` }));
    });
    req.on('error', (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
    req.end(payload);
  });
}

describe.skipIf(!onPostgres)('SIGTERM under load (the image, on PostgreSQL)', () => {
  const cleanup: (() => unknown)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it('finishes every accepted request and the webhook sends under way, leaves no lease behind, and exits 0', async () => {
    const dir = assembleImage();
    cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const stripe: LocalStripeServer = await startLocalStripe({ port: 0 });
    cleanup.push(() => stripe.close());
    const receiver: Receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    // Already migrated (the image's migration command is scripts/image.test.ts's subject).
    const databaseUrl = await migratedPostgresDatabase();

    const server: Proc & { url: string } = await startServer(dir, {
      DATABASE_URL: databaseUrl,
      MIGRATE: '0',
      APP_SECRET: 'shutdown-test-secret-of-at-least-32-bytes-0123456789',
      ADMIN_TOKEN: ADMIN,
      STRIPE_API_URL: stripe.url,
      WEBHOOK_ALLOW_PRIVATE: '1',
      // The image runs with NODE_ENV=production; its receivers here are on loopback.
      ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1',
      WORKER_INTERVAL_MS: '100',
    });
    cleanup.push(() => server.signal('SIGKILL'));
    const { url } = server;
    await waitFor(`${url}/readyz`, server);

    const call = async (method: string, path: string, auth: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: auth, ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const company = await call('POST', '/v1/companies', `Bearer ${ADMIN}`, { name: 'Drain Co', email: 'ops@drain.test', processor_key: 'sk_test_drain', processor_publishable_key: 'pk_test_drain' });
    expect(company.status).toBe(200);
    const co = company.body.data.id;
    const auth = `Basic ${Buffer.from(`${co}:${company.body.data.api_key}`).toString('base64')}`;
    const plan = await call('POST', `/v1/companies/${co}/plans`, auth, { name: 'Free', balances: [{ amount: 1_000_000, denomination: 'tokens' }], billing_rules: [{ type: 'chat', amount: 1, denomination: 'tokens' }] });
    const accountIds: string[] = [];
    for (const name of ['A', 'B', 'C']) {
      const account = await call('POST', `/v1/companies/${co}/accounts`, auth, { name, email: `${name}@drain.test`, plan_id: plan.body.data.id });
      expect(account.status, JSON.stringify(account.body)).toBe(200);
      accountIds.push(account.body.data.id);
    }
    const hook = await call('POST', `/v1/companies/${co}/webhooks`, auth, { url: receiver.url });
    const hookId = hook.body.data.id;
    expect((await call('POST', `/v1/companies/${co}/webhooks/${hookId}/subscribe/balance_change`, auth)).status).toBe(200);

    // A first delivery, answered at once, to be re-sent during the shutdown.
    expect((await call('POST', `/v1/accounts/${accountIds[0]}/events`, auth, { type: 'chat' })).status).toBe(200);
    const [first] = await receiver.waitFor(1, 20_000);
    const firstId = first.headers['webhook-id'];
    // A balance_change retried with a newer balance carries `<delivery id>_r<attempt>`.
    const ofFirst = (r: { headers: Record<string, string> }) => deliveryIdOf(r.headers['webhook-id']) === firstId;
    const deliveryPath = `/v1/companies/${co}/webhooks/${hookId}/deliveries/${firstId}`;
    for (let i = 0; i < 100 && (await call('GET', deliveryPath, auth)).body.data.status !== 'succeeded'; i++) await new Promise((r) => setTimeout(r, 100));

    // From now on the receiver holds every request until released.
    receiver.answer(() => 'hang');
    const outcomes: Outcome[] = [];
    let counter = 0;
    let loadDone = false;
    // Eight clients, each opening a connection per request.
    const loops = Array.from({ length: 8 }, async (_, n) => {
      let refused = 0;
      while (!loadDone && refused < 3) {
        const key = `load-${n}-${counter++}`;
        const sentAt = Date.now();
        const r = await post(url, `/v1/accounts/${accountIds[n % accountIds.length]}/events`, auth, { type: 'chat', idempotency_key: key });
        outcomes.push({ key, status: r.status, error: r.error, close: r.close, sentAt });
        refused = r.error === 'ECONNREFUSED' ? refused + 1 : 0;
      }
    });
    // Background sends are under way (held by the receiver)...
    const until = Date.now() + 20_000;
    while (!receiver.requests.some((r) => !ofFirst(r))) {
      if (Date.now() > until) throw new Error(`no background send started\n${server.output()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    // ...and a request is in flight: the re-send of the first delivery, sent inline, held too.
    const replay = call('POST', `${deliveryPath}/retry`, auth);
    while (!receiver.requests.some((r, i) => i > 0 && ofFirst(r))) await new Promise((r) => setTimeout(r, 20));
    const requestsBefore = outcomes.length;

    const sigtermAt = Date.now();
    server.signal('SIGTERM');
    // Readiness is gone at once: every probe from here is refused or answers 503, never 200.
    const probes: (number | string)[] = [];
    const probing = (async () => {
      while (server.child.exitCode === null) {
        try {
          probes.push((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) })).status);
        } catch (err) {
          probes.push(String((err as { cause?: { code?: string } }).cause?.code ?? err));
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    await new Promise((r) => setTimeout(r, 1_500));
    expect(server.child.exitCode, 'the process waits for the request and the sends under way').toBeNull();
    const heldSends = receiver.requests.filter((r) => !r.answered);
    expect(heldSends.length).toBeGreaterThanOrEqual(2);
    const releasedAt = Date.now();
    receiver.answer(() => ({ status: 200 }));
    receiver.release();

    const code = await server.exited;
    const exitedAt = Date.now();
    loadDone = true;
    await Promise.all(loops);
    await probing;
    expect(code, server.output()).toBe(0);
    expect(exitedAt).toBeGreaterThanOrEqual(releasedAt);
    expect(exitedAt - sigtermAt).toBeLessThan(25_000);
    expect(probes.length).toBeGreaterThan(0);
    // A probe on a kept-alive socket that the closing server ends gets no answer (undici: UND_ERR_SOCKET).
    expect(probes.filter((p) => p !== 503 && p !== 'ECONNREFUSED' && p !== 'ECONNRESET' && p !== 'UND_ERR_SOCKET'), JSON.stringify(probes)).toEqual([]);

    // The request in flight finished, with the attempt it was making.
    const replayed = await replay;
    expect(replayed.status).toBe(200);
    expect(replayed.body.data.status).toBe('succeeded');
    expect(replayed.body.data.attempts_log.at(-1).response_status).toBe(200);

    // Every request got a 2xx, or was refused before it connected: no connection was reset, none
    // cut. Those sent after the signal (the SHUTDOWN_DELAY_MS of the image, then the drain) were
    // answered with Connection: close.
    expect(outcomes.length).toBeGreaterThan(requestsBefore);
    const answered = outcomes.filter((o) => o.status !== undefined);
    const notTaken = outcomes.filter((o) => o.status === undefined);
    const resets = notTaken.filter((o) => o.error === 'ECONNRESET').length;
    console.log(`drain: ${outcomes.length} requests from 8 clients, ${answered.length} answered, ${notTaken.length - resets} refused, ${resets} reset; exited ${exitedAt - sigtermAt} ms after SIGTERM`);
    expect(resets, `resets among ${outcomes.length} requests`).toBe(0);
    expect(answered.filter((o) => o.status! < 200 || o.status! >= 300 || o.error)).toEqual([]);
    expect(notTaken.filter((o) => o.error !== 'ECONNREFUSED')).toEqual([]);
    expect(notTaken.length).toBeGreaterThan(0);
    const afterSignal = answered.filter((o) => o.sentAt > sigtermAt + 500);
    expect(afterSignal.length).toBeGreaterThan(0);
    expect(afterSignal.filter((o) => !o.close)).toEqual([]);

    const check = await openPostgres(databaseUrl, { max: 1, migrate: false });
    cleanup.push(() => check.close());
    const recorded = await query<{ key: string; n: number }>(
      check.db,
      sql`select idempotency_key as key, count(*)::int as n from events where idempotency_key like 'load-%' group by idempotency_key`,
    );
    const counts = new Map(recorded.map((r) => [r.key, r.n]));
    for (const o of answered) expect(counts.get(o.key), o.key).toBe(1);
    for (const o of notTaken) expect(counts.has(o.key), `${o.key} (${o.error}) was recorded`).toBe(false);
    expect(recorded.length).toBe(answered.length);

    // No lease is left to expire: nothing running, nothing sending, no renewal held.
    expect(await query(check.db, sql`select id from jobs where status = 'running'`)).toEqual([]);
    expect(await query(check.db, sql`select id, status from webhook_deliveries where status = 'sending'`)).toEqual([]);
    expect(await query(check.db, sql`select id from accounts where renewal_locked_until is not null`)).toEqual([]);
    // The sends that were held finished and were recorded as delivered.
    for (const r of heldSends) {
      const id = deliveryIdOf(r.headers['webhook-id']);
      const [row] = await query<{ status: string; codes: number[] }>(
        check.db,
        sql`select d.status, array_agg(a.response_status order by a.created_at) as codes
          from webhook_deliveries d join webhook_attempts a on a.delivery_id = d.id where d.id = ${id} group by d.status`,
      );
      expect(row, id).toBeTruthy();
      expect(row.codes.at(-1), id).toBe(200);
      expect(row.status, id).toBe('succeeded');
    }
  });
});
