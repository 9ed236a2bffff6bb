import { performance } from 'node:perf_hooks';
import { Webhook as Signer } from 'standardwebhooks';
import type { Db } from '../../db/client';
import { balanceForSend, cancelDelivery, recordAttempt, type Delivery } from '../../db/sql/deliveries';
import { newId } from '../../ids';
import { now as clockNow, wallClock } from '../../clock';
import { log } from '../../log';
import { stringifyJson } from '../../money';
import { setting } from '../../env';
import { webhookPassword, webhookSecret, type Webhook } from './webhooks';
import { postWebhook, type SendError } from './send';
import { messageId, renderPayload, type Stored } from './payload';
import { MAX_ATTEMPTS, RETRY_DELAYS_S } from './schedule';
import type { SendSlots } from './send-slots';

const USER_AGENT = 'billing-webhooks/1 (Standard Webhooks)';

/** A receiver must answer 2xx within this (10 s; WEBHOOK_TIMEOUT_MS overrides it, e.g. in tests). */
export function sendTimeoutMs(): number {
  return setting('WEBHOOK_TIMEOUT_MS');
}

// A claimed delivery is `sending` with next_attempt_at as its lease: if the worker dies
// mid-send, another takes it over when the lease ends. Far longer than the send timeout.
export const leaseUntil = (at: Date) => new Date(at.getTime() + Math.max(60_000, sendTimeoutMs() + 30_000));

/** `prepared`: false when the attempt failed before sending (nothing went out). */
type Outcome = { status: number | null; error: SendError | null; durationMs: number; at: Date; balance: string | null; id: string | null; prepared: boolean };

/** One HTTP attempt. Never throws: every way it can go wrong becomes the attempt's outcome. */
async function attempt(db: Db, w: Webhook, d: Delivery): Promise<Outcome> {
  const at = clockNow();
  const started = performance.now();
  const timeoutMs = sendTimeoutMs();
  let balance: string | null = null;
  let id: string | null = null;
  try {
    balance = d.topic === 'balance_change' && d.accountId && d.denomination ? await balanceForSend(db, d.accountId, d.denomination) : null;
    id = messageId(d, balance);
    const body = stringifyJson(renderPayload(w, d, balance));
    // Wall-clock time even under the test clock, so receivers can check the signature with the
    // standard five-minute tolerance.
    const timestamp = wallClock();
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': new Signer(webhookSecret(w)).sign(id, timestamp, body),
    };
    if (w.username) headers.authorization = `Basic ${Buffer.from(`${w.username}:${webhookPassword(w) ?? ''}`).toString('base64')}`;
    const sent = await postWebhook(w.url, headers, body, timeoutMs);
    return { ...sent, durationMs: Math.round(performance.now() - started), at, balance, id, prepared: true };
  } catch (err) {
    // Reading the balance or signing failed: nothing went out, and the attempt is retried.
    log.error({ delivery_id: d.id, webhook_id: d.webhookId, err }, 'webhook delivery could not be prepared');
    return { status: null, error: 'connection_failed', durationMs: Math.round(performance.now() - started), at, balance: null, id: null, prepared: false };
  }
}

/**
 * Logs the attempt and moves the delivery on: succeeded; or pending again at the next step of
 * the schedule; or failed when the schedule is used up (a replay of a delivered one stays succeeded).
 */
async function recordOutcome(db: Db, d: Delivery, o: Outcome): Promise<boolean> {
  const ok = o.status !== null && o.status >= 200 && o.status < 300;
  const end = clockNow();
  const status = ok || (d.payload as Stored | null)?.delivered === true ? 'succeeded' : d.attempts >= MAX_ATTEMPTS ? 'failed' : 'pending';
  const next = status === 'pending' ? new Date(end.getTime() + RETRY_DELAYS_S[Math.max(0, d.attempts - 1)] * 1000) : null;
  await recordAttempt(db, d, o, { attemptId: newId('wha'), status, next, end, pullForward: ok });
  return ok;
}

/**
 * Sends one claimed delivery and records the outcome (a delivery whose webhook is gone is
 * cancelled); `slots` learn whether the webhook is slow. True when the receiver took it.
 */
export async function sendClaimed(db: Db, d: Delivery, w: Webhook | undefined, slots: SendSlots): Promise<boolean> {
  if (!w) {
    await cancelDelivery(db, d.id, clockNow());
    return true;
  }
  const outcome = await attempt(db, w, d);
  slots.noteDuration(w.id, { durationMs: outcome.durationMs, answered: outcome.status !== null, timedOut: outcome.error === 'timeout' }, sendTimeoutMs());
  log.info({ delivery_id: d.id, webhook_id: w.id, company_id: w.companyId, topic: d.topic, attempt: d.attempts, outcome: outcome.error ?? outcome.status, duration_ms: outcome.durationMs }, 'webhook attempt');
  return recordOutcome(db, d, outcome);
}
