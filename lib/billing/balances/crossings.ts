import type { SQL } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../../db/client';
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
  /** The plan alert inputs when the caller already read them (null: no alert to check, e.g. a plan reset). */
  planAlert?: { included: string; pct: string; period: Date } | null;
  /** When the rise took effect, if before now (a hold that lapsed earlier): a pause recorded after it stands. */
  raisedAt?: Date;
  /** false when the caller knows the balance has no notification state (nothing to clear). */
  hasStates?: boolean;
  /** What the move crossed, when the caller's statement already evaluated `crossingRules` under the lock. */
  crossed?: Omit<Crossed, 'moved'>;
};

/** `needed`: for `paused`, the available amount that is sufficient again (a refused event's cost; 0 after a drop below zero). */
type Enter = { balanceId: string; kind: string; period?: string; n: Notification[]; always?: boolean; needed?: Units };
/** A gated event refused on a balance: its `pause_balance`, and the cost the balance fell short of. */
export type Refusal = Notification & { needed: Units };

/**
 * After balances moved inside a transaction: queue `balance_change`, the crossing notifications,
 * and a threshold refill job when `available` drops below the refill threshold.
 *
 * `available` before and after are exact (read under the balance's row lock), so a drop below
 * zero or below the refill threshold is one crossing and notifies once, whichever path moved the
 * balance. notification_states records what the balance is in (`negative`, `paused`,
 * `refill_threshold`; `plan_threshold` per plan period) and is re-armed from the state each move
 * leaves, on every path: at or above zero clears `negative`, at or above the refill threshold
 * clears `refill_threshold`, and a rise of `available` to what the pause needs clears `paused`
 * (the cost a gated event was refused for; zero after a drop below zero). A refused gated event
 * sends `pause_balance` only while no `paused` row exists, so refusals pause once until the
 * balance is sufficient again; a drop below zero records `paused` as well.
 */
export async function afterBalancesMoved(db: Db, companyId: string, moved: Moved[], rejected: Refusal[], now: Date): Promise<void> {
  const out: Notification[] = [];
  const enter: Enter[] = [];
  const leave: { balanceId: string; kinds: string[]; raisedAt?: Date; after: Units }[] = [];
  const refillCrossed = new Set<string>();
  const falls: Moved[] = [];
  for (const m of moved) {
    const changed = cmp(m.amount, m.startAmount) !== 0 || (m.pending !== null && m.startPending !== null && cmp(m.pending, m.startPending) !== 0);
    if (!changed) continue;
    out.push({ accountId: m.accountId, denomination: m.denomination, topic: 'balance_change', balance: m.amount });
    const amountFell = cmp(m.amount, m.startAmount) < 0 && m.planManaged !== false && m.planAlert !== null;
    if (m.pending === null || m.startPending === null) {
      if (amountFell) falls.push(m);
      continue;
    }
    const before = sub(m.startAmount, m.startPending);
    const after = sub(m.amount, m.pending);
    const clear = leftStates.filter((s) => s.left(after, m.threshold)).map((s) => s.kind);
    if (cmp(after, before) > 0) clear.push('paused');
    if (clear.length && m.hasStates !== false) leave.push({ balanceId: m.id, kinds: clear, raisedAt: m.raisedAt, after });
    // Only a fall can cross anything: rises and unchanged balances are not sent to the database.
    if (amountFell || cmp(after, before) < 0) falls.push(m);
  }
  const planEntries: Enter[] = [];
  const read = await readCrossings(db, falls.filter((m) => !m.crossed));
  let r = 0;
  for (const c of falls.map((m) => (m.crossed ? { moved: m, ...m.crossed } : read[r++]))) {
    const m = c.moved;
    const base = { accountId: m.accountId, denomination: m.denomination, balance: m.amount };
    if (c.belowZero) {
      enter.push({ balanceId: m.id, kind: 'negative', always: true, n: [{ ...base, topic: 'negative_balance' }] });
      enter.push({ balanceId: m.id, kind: 'paused', always: true, n: [{ ...base, topic: 'pause_balance' }], needed: '0' });
    }
    if (c.belowRefillThreshold) {
      enter.push({ balanceId: m.id, kind: 'refill_threshold', always: true, n: [{ ...base, topic: 'threshold', detail: { reason: 'refill_threshold', threshold: m.threshold } }] });
      refillCrossed.add(m.id);
    }
    if (c.planAlert) {
      planEntries.push({
        balanceId: m.id,
        kind: 'plan_threshold',
        period: c.planAlert.period,
        n: [{ ...base, topic: 'threshold', detail: { reason: 'plan_threshold', threshold_alert_percentage: c.planAlert.pct, included_amount: c.planAlert.included } }],
      });
    }
  }
  enter.push(...planEntries);
  if (rejected.length) {
    // One statement for all refused items of a batch: the balances they were refused on.
    const rows = await query<{ id: string; account_id: string; denomination: string }>(
      db,
      sql`select b.id, b.account_id, b.denomination from balances b
        join unnest(${textArray(rejected.map((r) => r.accountId))}, ${textArray(rejected.map((r) => r.denomination))}) as v(account_id, denomination)
          on b.account_id = v.account_id and b.denomination = v.denomination`,
    );
    const ids = new Map(rows.map((b) => [key(b.account_id, b.denomination), b.id]));
    for (const { needed, ...r } of rejected) {
      const id = ids.get(key(r.accountId, r.denomination));
      if (id) enter.push({ balanceId: id, kind: 'paused', n: [r], needed });
    }
  }
  if (leave.length) {
    const flat = leave.flatMap((l) => l.kinds.map((kind) => ({ balanceId: l.balanceId, kind, raisedAt: l.raisedAt?.toISOString() ?? null, after: l.after })));
    // A pause recorded after a lapsed hold's rise already saw the raised balance: it stands. A
    // pause lasts until `available` is sufficient again: at least the cost it was refused for
    // (0 for one entered by a drop below zero; any rise for one recorded without it).
    await query(
      db,
      sql`delete from notification_states n
        using unnest(${textArray(flat.map((f) => f.balanceId))}, ${textArray(flat.map((f) => f.kind))}, ${textArray(flat.map((f) => f.raisedAt))}::timestamptz[], ${textArray(flat.map((f) => f.after))}::numeric[]) as v(balance_id, kind, raised_at, after)
        where n.balance_id = v.balance_id and n.kind = v.kind
          and not (n.kind = 'paused' and v.raised_at is not null and n.created_at > v.raised_at)
          and not (n.kind = 'paused' and v.after < coalesce((n.payload->>'needed')::numeric, v.after))`,
    );
  }
  if (enter.length) {
    const inserted = await query<{ balance_id: string; kind: string; period: string }>(
      db,
      sql`insert into notification_states (balance_id, kind, period, payload, created_at)
        select v.balance_id, v.kind, v.period, case when v.needed is not null then jsonb_build_object('needed', v.needed) end, ${now.toISOString()}::timestamptz
        from unnest(${textArray(enter.map((e) => e.balanceId))}, ${textArray(enter.map((e) => e.kind))}, ${textArray(enter.map((e) => e.period ?? ''))}, ${textArray(enter.map((e) => e.needed ?? null))})
          as v(balance_id, kind, period, needed)
        on conflict do nothing returning balance_id, kind, period`,
    );
    // A state entered by this statement notifies once, through its first entry.
    const fresh = new Set(inserted.map((r) => stateKey(r.balance_id, r.kind, r.period)));
    for (const e of enter) {
      const k = stateKey(e.balanceId, e.kind, e.period ?? '');
      if (fresh.delete(k) || e.always) out.push(...e.n);
    }
  }
  const refills = moved.filter((m) => refillCrossed.has(m.id)).map((m) => m.id);
  if (refills.length) await queueThresholdRefills(db, refills, now);
  await enqueueNotifications(db, companyId, out, now);
}

/**
 * The crossing rules, as SQL over what a move left (each input an SQL expression; NULL where it
 * does not apply). The single-event statement (events/single.ts) decides with these same
 * fragments whether its event crosses anything, and the general path evaluates them in
 * `readCrossings`: one source, so the two paths cannot drift apart.
 *
 * - `belowZero`: `available` went from zero or more to below zero.
 * - `belowRefillThreshold`: `available` went from at or above a positive refill threshold to
 *   below it.
 * - `planAlert`: usage of a plan's included balance (included − amount) reached the plan's
 *   `threshold_alert_percentage` with this fall of the amount. Once per plan period: the state
 *   row is keyed by `planPeriodKey` of the account's `last_plan_renewal`, so a renewal or plan
 *   change arms it again.
 */
export function crossingRules(c: { before: SQL; after: SQL; threshold: SQL; startAmount: SQL; amount: SQL; included: SQL; pct: SQL; period: SQL }) {
  return {
    belowZero: sql`(${c.before} >= 0 and ${c.after} < 0)`,
    belowRefillThreshold: sql`(${c.threshold} > 0 and ${c.before} >= ${c.threshold} and ${c.after} < ${c.threshold})`,
    planAlert: sql`(${c.amount} < ${c.startAmount} and ${c.included} > 0 and ${c.pct} is not null and ${c.period} is not null
      and ${c.included} - ${c.amount} >= ${c.included} * ${c.pct} / 100)`,
  };
}

/**
 * The states a move leaves by where it leaves `available`: at or above zero leaves `negative`, at
 * or above a positive refill threshold leaves `refill_threshold` (and any rise leaves `paused`).
 * `afterBalancesMoved` clears them with `left`; the single-event statement hands an event that
 * would leave one to the general path with `leavesStateSql`. One list, so the two cannot drift.
 */
const leftStates: { kind: string; left: (after: Units, threshold: Units | null) => boolean; sql: (after: SQL, threshold: SQL) => SQL }[] = [
  { kind: 'negative', left: (after) => cmp(after, '0') >= 0, sql: (after) => sql`${after} >= 0` },
  {
    kind: 'refill_threshold',
    left: (after, threshold) => threshold !== null && cmp(threshold, '0') > 0 && cmp(after, threshold) >= 0,
    sql: (after, threshold) => sql`${threshold} > 0 and ${after} >= ${threshold}`,
  },
];

/** Whether a state row of `kind` is one the move leaves (see `leftStates`), as SQL; NULL reads as no. */
export function leavesStateSql(c: { kind: SQL; after: SQL; threshold: SQL }): SQL {
  return sql.join(
    leftStates.map((s) => sql`(${c.kind} = ${sql.raw(`'${s.kind}'`)} and ${s.sql(c.after, c.threshold)})`),
    sql` or `,
  );
}

/** The plan period a `plan_threshold` state belongs to: `last_plan_renewal` as an ISO 8601 UTC string. */
export function planPeriodKey(period: SQL): SQL {
  return sql`to_char(${period} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

type Crossed = {
  moved: Moved;
  belowZero: boolean;
  belowRefillThreshold: boolean;
  planAlert: { included: string; pct: string; period: string } | null;
};

/**
 * Evaluates `crossingRules` for the balances that fell, in one statement. The plan alert
 * inputs come from the caller when it read them under the lock, or are read here for balances
 * that may be plan-managed.
 */
async function readCrossings(db: Db, falls: Moved[]): Promise<Crossed[]> {
  if (!falls.length) return [];
  const col = (f: (m: Moved) => string | null) => textArray(falls.map(f));
  const known = (m: Moved) => m.planAlert ?? null;
  const rules = crossingRules({
    before: sql`v.before::numeric`,
    after: sql`v.after::numeric`,
    threshold: sql`v.threshold::numeric`,
    startAmount: sql`v.start_amount::numeric`,
    amount: sql`v.amount::numeric`,
    included: sql`coalesce(v.included, k.included)::numeric`,
    pct: sql`coalesce(v.pct, k.pct)::numeric`,
    period: sql`coalesce(v.period::timestamptz, k.period)`,
  });
  const rows = await query<{ below_zero: boolean; below_refill_threshold: boolean; plan_alert: boolean; included: string | null; pct: string | null; period: string | null }>(
    db,
    sql`select coalesce(${rules.belowZero}, false) as below_zero, coalesce(${rules.belowRefillThreshold}, false) as below_refill_threshold,
        coalesce(${rules.planAlert}, false) as plan_alert,
        coalesce(v.included, k.included) as included, coalesce(v.pct, k.pct) as pct, ${planPeriodKey(sql`coalesce(v.period::timestamptz, k.period)`)} as period
      from unnest(${col((m) => m.id)}, ${col((m) => m.startAmount)}, ${col((m) => m.amount)},
        ${col((m) => (m.pending === null || m.startPending === null ? null : sub(m.startAmount, m.startPending)))},
        ${col((m) => (m.pending === null || m.startPending === null ? null : sub(m.amount, m.pending)))}, ${col((m) => m.threshold)},
        ${col((m) => known(m)?.included ?? null)}, ${col((m) => known(m)?.pct ?? null)}, ${col((m) => known(m)?.period.toISOString() ?? null)},
        ${col((m) => String(m.planAlert === undefined))})
        with ordinality as v(id, start_amount, amount, before, after, threshold, included, pct, period, look_up, ord)
      left join lateral (
        select b.included_amount::text as included, p.threshold_alert_percentage as pct, a.last_plan_renewal as period
        from balances b join plans p on p.id = b.managed_by_plan_id join accounts a on a.id = b.account_id
        where v.look_up::boolean and b.id = v.id
      ) k on true
      order by v.ord`,
  );
  return rows.map((r, i) => ({
    moved: falls[i],
    belowZero: r.below_zero,
    belowRefillThreshold: r.below_refill_threshold,
    planAlert: r.plan_alert ? { included: r.included!, pct: r.pct!, period: r.period! } : null,
  }));
}

/** The dedupe keys a balance's threshold refill jobs are queued under: its id, and this suffixed to it. */
export const NEXT_REFILL_SUFFIX = ':next';
export const thresholdRefillKeys = (balanceId: string): [string, string] => [balanceId, `${balanceId}${NEXT_REFILL_SUFFIX}`];

/**
 * One threshold refill queued per balance: the partial unique index on jobs (queued or running)
 * keeps a second crossing from queueing another while one waits. A crossing while the balance's
 * refill job is running (its units may be in already, its job not yet marked done) is a new one:
 * it is queued under the key `<balance>:next`, and runs once the charge before it is settled
 * (runThresholdRefill defers itself while one is pending).
 */
export async function queueThresholdRefill(db: Db, balanceId: string, now: Date): Promise<void> {
  await queueThresholdRefills(db, [balanceId], now);
}

async function queueThresholdRefills(db: Db, balanceIds: string[], now: Date): Promise<void> {
  const at = now.toISOString();
  await query(
    db,
    sql`insert into jobs (id, kind, dedupe_key, payload, status, run_at, attempts, created_at, updated_at)
      select v.id, 'threshold_refill',
        case when exists (select 1 from jobs j where j.kind = 'threshold_refill' and j.dedupe_key = v.balance_id and j.status = 'running')
          then v.balance_id || ${NEXT_REFILL_SUFFIX} else v.balance_id end,
        jsonb_build_object('balance_id', v.balance_id), 'queued', ${at}::timestamptz, 0, ${at}::timestamptz, ${at}::timestamptz
      from unnest(${textArray(balanceIds.map(() => newId('job')))}, ${textArray(balanceIds)}) as v(id, balance_id)
      on conflict do nothing`,
  );
}

const key = (accountId: string, denomination: string) => `${accountId}\u0000${denomination}`;
const stateKey = (balanceId: string, kind: string, period: string) => `${balanceId}\u0000${kind}\u0000${period}`;
