import Decimal from 'decimal.js';
import { query, sql, type Db } from '../../db/client';
import { newId } from '../../ids';
import { cmp, sub, type Units } from '../../money';
import { enqueueNotifications, type Notification } from '../webhooks/outbox';

export type Moved = {
  accountId: string;
  denomination: string;
  id: string;
  startAmount: Units;
  amount: Units;
  /** null when the move cannot change `available` (completing a hold). */
  startPending: Units | null;
  pending: Units | null;
  threshold: Units | null;
  /** Whether a plan manages the balance; undefined means unknown (looked up when it fell). */
  planManaged?: boolean;
  /** The plan alert inputs when the caller already read them (null: no alert configured). */
  planAlert?: { included: string; pct: string; period: Date } | null;
};

/**
 * After balances moved inside a transaction: queue `balance_change`, and the crossing
 * notifications once per crossing (state kept in notification_states, cleared when the balance
 * recovers), and a threshold refill job when `available` drops below the refill threshold.
 */
export async function afterBalancesMoved(db: Db, companyId: string, moved: Moved[], rejected: Notification[], now: Date): Promise<void> {
  const out: Notification[] = [];
  const enter: { balanceId: string; kind: string; period?: string; n: Notification[] }[] = [];
  const leave: { balanceId: string; kinds: string[] }[] = [];
  for (const m of moved) {
    const changed = m.amount !== m.startAmount || m.pending !== m.startPending;
    if (!changed) continue;
    out.push({ accountId: m.accountId, denomination: m.denomination, topic: 'balance_change', balance: m.amount });
    if (m.pending === null || m.startPending === null) continue;
    const before = sub(m.startAmount, m.startPending);
    const after = sub(m.amount, m.pending);
    const base = { accountId: m.accountId, denomination: m.denomination, balance: m.amount };
    if (cmp(after, '0') < 0 && cmp(before, '0') >= 0) {
      enter.push({ balanceId: m.id, kind: 'negative', n: [{ ...base, topic: 'negative_balance' }, { ...base, topic: 'pause_balance' }] });
    } else if (cmp(after, '0') >= 0 && cmp(before, '0') < 0) {
      leave.push({ balanceId: m.id, kinds: ['negative', 'paused'] });
    }
    if (m.threshold !== null && cmp(m.threshold, '0') > 0) {
      if (cmp(after, m.threshold) < 0 && cmp(before, m.threshold) >= 0) {
        enter.push({ balanceId: m.id, kind: 'refill_threshold', n: [{ ...base, topic: 'threshold', detail: { reason: 'refill_threshold', threshold: m.threshold } }] });
        await queueThresholdRefill(db, m.id, now);
      } else if (cmp(after, m.threshold) >= 0 && cmp(before, m.threshold) < 0) {
        leave.push({ balanceId: m.id, kinds: ['refill_threshold'] });
      }
    }
  }
  enter.push(...(await planThresholdCrossings(db, moved)));
  for (const r of rejected) {
    const [b] = await query<{ id: string }>(db, sql`select id from balances where account_id = ${r.accountId} and denomination = ${r.denomination}`);
    if (b) enter.push({ balanceId: b.id, kind: 'paused', n: [r] });
  }
  for (const l of leave) {
    await query(db, sql`delete from notification_states where balance_id = ${l.balanceId} and kind in (${sql.join(l.kinds.map((k) => sql`${k}`), sql`, `)})`);
  }
  for (const e of enter) {
    const inserted = await query(
      db,
      sql`insert into notification_states (balance_id, kind, period, created_at) values (${e.balanceId}, ${e.kind}, ${e.period ?? ''}, ${now.toISOString()}::timestamptz)
        on conflict do nothing returning balance_id`,
    );
    if (inserted.length) out.push(...e.n);
  }
  await enqueueNotifications(db, companyId, out, now);
}

/**
 * `threshold` for plans: usage of a plan's included balance (included − amount) reached the
 * plan's `threshold_alert_percentage`. Once per plan period: the state row is keyed by the
 * account's `last_plan_renewal`, so a renewal or plan change arms it again. One query, and only
 * when a balance that may be plan-managed went down.
 */
async function planThresholdCrossings(db: Db, moved: Moved[]): Promise<{ balanceId: string; kind: string; period: string; n: Notification[] }[]> {
  const fell = moved.filter((m) => m.planManaged !== false && m.planAlert !== null && cmp(m.amount, m.startAmount) < 0);
  if (!fell.length) return [];
  const known = fell.filter((m) => m.planAlert);
  const unknown = fell.filter((m) => !m.planAlert);
  const rows: { id: string; included: string; pct: string; period: string | Date }[] = known.map((m) => ({ id: m.id, ...m.planAlert! }));
  if (unknown.length) rows.push(...(await query<{ id: string; included: string; pct: string; period: string | Date }>(
    db,
    sql`select b.id, b.included_amount::text as included, p.threshold_alert_percentage as pct, a.last_plan_renewal as period
      from balances b join plans p on p.id = b.managed_by_plan_id join accounts a on a.id = b.account_id
      where b.id in (${sql.join(unknown.map((m) => sql`${m.id}`), sql`, `)})
        and b.included_amount > 0 and p.threshold_alert_percentage is not null and a.last_plan_renewal is not null`,
  )));
  const out: { balanceId: string; kind: string; period: string; n: Notification[] }[] = [];
  for (const r of rows) {
    const m = fell.find((x) => x.id === r.id)!;
    const limit = new Decimal(r.included).mul(r.pct).div(100);
    if (new Decimal(r.included).minus(m.amount).lt(limit)) continue;
    out.push({
      balanceId: m.id,
      kind: 'plan_threshold',
      period: new Date(r.period).toISOString(),
      n: [{ accountId: m.accountId, denomination: m.denomination, topic: 'threshold', balance: m.amount, detail: { reason: 'plan_threshold', threshold_alert_percentage: r.pct, included_amount: r.included } }],
    });
  }
  return out;
}

/** One threshold refill in flight per balance: the partial unique index on jobs enforces it. */
export async function queueThresholdRefill(db: Db, balanceId: string, now: Date): Promise<void> {
  await query(
    db,
    sql`insert into jobs (id, kind, dedupe_key, payload, status, run_at, attempts, created_at, updated_at)
      values (${newId('job')}, 'threshold_refill', ${balanceId}, ${JSON.stringify({ balance_id: balanceId })}::jsonb, 'queued', ${now.toISOString()}::timestamptz, 0, ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz)
      on conflict do nothing`,
  );
}
