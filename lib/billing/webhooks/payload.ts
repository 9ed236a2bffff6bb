import type { Delivery } from '../../db/sql/deliveries';
import { toUnits, unitsOut } from '../../money';
import type { Webhook } from './webhooks';

export type { Delivery };

/**
 * `sent`: the message the last logged attempt carried (a `balance_change`'s balance changes).
 * `delivered`: a replay of a delivery that had succeeded is under way; its failure leaves it
 * succeeded, even when another process finishes the replay after this one died.
 */
export type Stored = { balance?: string; detail?: Record<string, unknown>; sent?: { id: string; balance: string | null; attempt: number }; delivered?: boolean };

/**
 * The body a receiver gets, per registration style. Variant A (`type`): company_id,
 * callback_id (the delivery id: the `webhook-id` header, see messageId), account_id, type,
 * account_balance (number), account_denomination. Variant B (`topic`): webhook_id, topic,
 * account_id, denomination, balance (exact decimal string). Extra facts (the failed charge,
 * the threshold crossed, the plan refilled) ride under `data`.
 */
export function renderPayload(w: Pick<Webhook, 'id' | 'companyId' | 'style'>, d: Delivery, liveBalance?: string | null) {
  const stored = (d.payload ?? {}) as Stored;
  const balance = liveBalance ?? stored.balance ?? '0';
  const detail: { data?: Record<string, unknown> } = stored.detail && Object.keys(stored.detail).length ? { data: stored.detail } : {};
  // Every notification names its account and denomination (Notification in outbox.ts).
  const accountId = d.accountId as string;
  const denomination = d.denomination as string;
  if (w.style === 'type') {
    return {
      company_id: w.companyId,
      callback_id: d.id,
      account_id: accountId,
      type: d.topic,
      account_balance: unitsOut(balance),
      account_denomination: denomination,
      ...detail,
    };
  }
  return { webhook_id: w.id, topic: d.topic, account_id: accountId, denomination, balance: toUnits(balance), ...detail };
}

/**
 * The attempt's `webhook-id`. Standard Webhooks keeps it the same on every attempt of one message,
 * so receivers deduplicate on it, and every delivery but a `balance_change` carries the same body
 * each time: its id is the delivery's. A `balance_change` carries the balance at send time, so a
 * retry can carry a newer balance than the attempt before it. That is a new message, and gets a
 * new id (the delivery's, `_r` and the attempt's number): a receiver that handled the earlier attempt
 * while we gave up on its answer would otherwise drop the newer balance as a duplicate. The same
 * when the attempt before was never logged (its process died): what it carried is not known.
 * An attempt that could not be prepared sent nothing; it carries the record of what went out
 * before it forward (`balance` null: nothing has gone out under that id yet), so the next
 * attempt keeps the message's id.
 */
export function messageId(d: Pick<Delivery, 'id' | 'attempts' | 'payload'>, balance: string | null): string {
  const sent = ((d.payload ?? {}) as Stored).sent;
  if (balance === null || (!sent && d.attempts <= 1)) return d.id;
  return sent && sent.attempt === d.attempts - 1 && (sent.balance === balance || sent.balance === null) ? sent.id : `${d.id}_r${d.attempts}`;
}
