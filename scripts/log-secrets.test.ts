import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_TEST_TIMEOUT, startAppServer, type AppServer } from '../lib/testing/servers';
import { migratedDataDir } from '../lib/testing/templates';
import { startReceiver } from '../lib/testing/webhook-receiver';
import { useLocalStripe } from '../lib/testing/harness';
import { findSecrets, logLines } from '../lib/testing/log-scan';

// A server taken through every secret it holds (operator token, API keys, processor keys, card
// tokens, collector links, webhook secrets and Basic credentials, console passwords, the metrics
// token, APP_SECRET), right and wrong, at LOG_LEVEL=debug; then every line it wrote is searched.
const APP_SECRET = 'log-scan-app-secret-0123456789-abcdefghij';
const ADMIN = 'operator-token-for-the-log-scan-0123';
const METRICS = 'metrics-token-for-the-log-scan-4567';
const PASSWORD = 'console password for the log scan';
const WEBHOOK_PASSWORD = 'receiver-password-9876-zyx';
const suffix = `${process.pid}_${Date.now()}`;
const PROCESSOR_KEY = `sk_test_logscan_${suffix}`;
const PUBLISHABLE_KEY = `pk_test_logscan_${suffix}`;

describe('the logs of a server taken through every secret', () => {
  const stripe = useLocalStripe();
  let server: AppServer;
  let dir: string;
  const known: Record<string, string> = {
    'app secret': APP_SECRET,
    'operator token': ADMIN,
    'metrics token': METRICS,
    'console password': PASSWORD,
    'webhook password': WEBHOOK_PASSWORD,
    'processor key': PROCESSOR_KEY,
    'publishable key': PUBLISHABLE_KEY,
  };

  beforeAll(async () => {
    dir = await migratedDataDir('log-scan-');
    server = await startAppServer({
      DATA_DIR: dir,
      APP_SECRET,
      ADMIN_TOKEN: ADMIN,
      METRICS_TOKEN: METRICS,
      STRIPE_API_URL: stripe.url,
      LOG_LEVEL: 'debug',
      WEBHOOK_ALLOW_PRIVATE: '1',
      WORKER_INTERVAL_MS: '100',
    });
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('holds none of them, in any encoding, while it logged every call', { timeout: SERVER_TEST_TIMEOUT }, async () => {
    const base = server.url;
    const json = (body: unknown) => ({ 'content-type': 'application/json', body: JSON.stringify(body) });
    const call = async (method: string, p: string, opts: { auth?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
      const { body, ...rest } = opts.body === undefined ? { body: undefined } : json(opts.body);
      const res = await fetch(`${base}${p}`, { method, body, headers: { ...rest, ...(opts.auth && { authorization: opts.auth }), ...opts.headers } });
      const text = await res.text();
      return { status: res.status, body: /json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(text) : text };
    };
    const basic = (id: string, key: string) => `Basic ${Buffer.from(`${id}:${key}`).toString('base64')}`;

    const created = await call('POST', '/v1/companies', {
      auth: `Bearer ${ADMIN}`,
      body: { name: 'Log Scan', email: 'ops@log-scan.test', password: PASSWORD, processor_key: PROCESSOR_KEY, processor_publishable_key: PUBLISHABLE_KEY },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const companyId = created.body.data.id as string;
    const apiKey = created.body.data.api_key as string;
    known['api key'] = apiKey;
    const co = basic(companyId, apiKey);

    const second = await call('POST', `/v1/companies/${companyId}/api_keys`, { auth: co });
    expect(second.status).toBe(200);
    known['second api key'] = second.body.data.api_key;
    expect(known['second api key']).toMatch(/^sk_/);

    // Wrong credentials of every kind.
    expect((await call('GET', '/v1/companies', { auth: basic(companyId, 'sk_wrongwrongwrongwrongwrongwrong00') })).status).toBe(401);
    expect((await call('POST', '/v1/companies', { auth: 'Bearer not-the-operator-token', body: {} })).status).toBe(401);
    expect((await call('GET', '/metrics', { auth: 'Bearer not-the-metrics-token' })).status).toBe(401);
    expect((await call('GET', '/metrics', { auth: `Bearer ${METRICS}` })).status).toBe(200);

    // Cards: a token attached, a declined one, a collector link and its submit.
    const acct = (await call('POST', `/v1/companies/${companyId}/accounts`, { auth: co, body: { name: 'Ada', email: 'ada@log-scan.test' } })).body.data.id as string;
    expect((await call('POST', `/v1/accounts/${acct}/card`, { auth: co, body: { token: 'tok_chargeDeclined' } })).status).toBeLessThan(500);
    expect((await call('POST', `/v1/accounts/${acct}/card`, { auth: co, body: { token: 'tok_visa' } })).status).toBe(200);
    const deposit = await call('POST', `/v1/accounts/${acct}/deposit`, { auth: co, body: { denomination: 'credits', amount_to_deposit: 10, amount_to_charge: 500 } });
    expect(deposit.status, JSON.stringify(deposit.body)).toBe(200);
    const link = await call('POST', `/v1/accounts/${acct}/card_collector`, { auth: co });
    expect(link.status).toBe(200);
    const collector = new URL(link.body.data.card_collector_url).pathname;
    known['collector link'] = collector.split('/').pop()!;
    expect((await call('POST', `${collector}/submit`, { body: { token: 'tok_mastercard' } })).status).toBe(200);
    const withNewCard = await call('POST', `/v1/accounts/${acct}/deposit`, { auth: co, body: { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 100 } });
    expect(withNewCard.status).toBe(200);

    // A webhook with Basic credentials and a signing secret, delivered by the in-process worker.
    const receiver = await startReceiver();
    try {
      const hook = await call('POST', `/v1/companies/${companyId}/webhooks`, { auth: co, body: { url: receiver.url, username: 'receiver', password: WEBHOOK_PASSWORD } });
      expect(hook.status).toBe(200);
      known['webhook secret'] = hook.body.data.secret;
      expect(known['webhook secret']).toMatch(/^whsec_/);
      await call('POST', `/v1/companies/${companyId}/webhooks/${hook.body.data.id}/subscribe/balance_change`, { auth: co });
      expect((await call('POST', `/v1/accounts/${acct}/events`, { auth: co, body: { type: 'q', cost_override_amount: 1, cost_override_denomination: 'credits' } })).status).toBe(200);
      await receiver.waitFor(1, 20_000);
      expect(receiver.requests[0].headers.authorization).toBe(`Basic ${Buffer.from(`receiver:${WEBHOOK_PASSWORD}`).toString('base64')}`);
    } finally {
      await receiver.close();
    }

    // Console sign-in, wrong password and right one.
    for (const password of ['not the password at all', PASSWORD]) {
      const csrf = await fetch(`${base}/api/auth/csrf`);
      const cookie = csrf.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
      const { csrfToken } = (await csrf.json()) as { csrfToken: string };
      const res = await fetch(`${base}/api/auth/callback/credentials`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: new URLSearchParams({ email: 'ops@log-scan.test', password, csrfToken, json: 'true', callbackUrl: `${base}/console` }),
      });
      expect(res.status).toBeLessThan(500);
    }
    // The webhook attempt is logged once the worker recorded it.
    for (let i = 0; i < 50 && !/"msg":"webhook attempt"/.test(server.output()); i++) await new Promise((r) => setTimeout(r, 100));
    await server.stop();

    const output = server.output();
    // Every line the server wrote is a JSON log line, but for Next.js' own start-up lines.
    const nextJs = /^\s*(▲|✓|⚠|-\s)/;
    expect(output.split('\n').filter((l) => l.trim() && !l.startsWith('{') && !nextJs.test(l))).toEqual([]);
    expect(logLines(output).split('\n').length).toBeGreaterThan(30);
    // It logged what happened: the calls, the charges, the webhook send, the worker.
    expect(output).toContain('"route":"/v1/companies","status":200');
    expect(output).toContain('"route":"/collect/{token}/submit","status":200');
    expect(output).toContain('"route":"/metrics","status":401');
    expect(output).toMatch(/"msg":"charge attempt"/);
    expect(output).toMatch(/"outcome":"paid"/);
    expect(output).toMatch(/"msg":"webhook attempt"/);
    // The worker's runs (at debug, every run); which of the sender's claims took the delivery,
    // the task's or the background sender's own poll, is a matter of timing.
    expect(output).toMatch(/"msg":"worker task webhook-deliveries: (\d+ handled|nothing due)"/);
    // And none of the secrets.
    expect(findSecrets(output, known)).toEqual([]);
  });
});
