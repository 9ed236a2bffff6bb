import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from '../src/index';

// The helper against the reference implementation of Standard Webhooks (the one the service signs
// with); a real delivery from a started server is verified in resources.test.ts.
describe('verifyWebhook', () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const signer = new Webhook(secret);
  const body = JSON.stringify({ webhook_id: 'w_1', topic: 'threshold', account_id: 'a_1', denomination: 'credits', balance: '12.5' });
  const signed = (id: string, at: Date, payload = body) => ({ 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signer.sign(id, at, payload) });

  it('accepts what the reference implementation signs, and agrees with its verify', async () => {
    const headers = signed('whd_1', new Date());
    expect(await verifyWebhook(body, headers, secret)).toEqual(JSON.parse(body));
    expect(signer.verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('accepts any matching signature of several (during a secret rotation) and skips other versions', async () => {
    const now = new Date();
    const good = signed('whd_2', now);
    const other = new Webhook(`whsec_${randomBytes(32).toString('base64')}`).sign('whd_2', now, body);
    expect(await verifyWebhook(body, { ...good, 'webhook-signature': `v2,abc ${other} ${good['webhook-signature']}` }, secret)).toMatchObject({ topic: 'threshold' });
    await expect(verifyWebhook(body, { ...good, 'webhook-signature': other }, secret)).rejects.toBeInstanceOf(WebhookVerificationError);
  });

  it('refuses a changed body, id or timestamp, a missing header, a stale or future timestamp, a bad secret', async () => {
    const now = new Date();
    const headers = signed('whd_3', now);
    await expect(verifyWebhook(`${body} `, headers, secret)).rejects.toThrow(/signature/);
    await expect(verifyWebhook(body, { ...headers, 'webhook-id': 'whd_4' }, secret)).rejects.toThrow(/signature/);
    await expect(verifyWebhook(body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) + 1) }, secret)).rejects.toThrow(/signature/);
    await expect(verifyWebhook(body, { 'webhook-id': 'whd_3', 'webhook-timestamp': headers['webhook-timestamp'] }, secret)).rejects.toThrow(/Missing/);
    const old = signed('whd_5', new Date(now.getTime() - 6 * 60_000));
    await expect(verifyWebhook(body, old, secret)).rejects.toThrow(/tolerance/);
    const future = signed('whd_6', new Date(now.getTime() + 6 * 60_000));
    await expect(verifyWebhook(body, future, secret)).rejects.toThrow(/tolerance/);
    expect(await verifyWebhook(body, old, secret, { toleranceSeconds: 400 })).toMatchObject({ topic: 'threshold' });
    await expect(verifyWebhook(body, headers, 'whsec_')).rejects.toThrow(/secret/);
    await expect(verifyWebhook(body, { ...headers, 'webhook-timestamp': 'soon' }, secret)).rejects.toThrow(/number/);
  });

  it('takes the secret with or without its whsec_ prefix, and header names in any case', async () => {
    const headers = signed('whd_7', new Date());
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(await verifyWebhook(body, upper, secret.slice('whsec_'.length))).toMatchObject({ topic: 'threshold' });
  });
});
