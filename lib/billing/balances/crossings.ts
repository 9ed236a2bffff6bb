import type { SQL } from 'drizzle-orm';
import { sql, type Db } from '../../db/client';
import { newId } from '../../ids';
import type { Units } from '../../money';
import type { Crossed, MovePlan, PlanAlert, StateKind } from './move-decision';
import type { MoveRules } from '../../db/sql/balance-move';
import { enterNotificationStates, leaveNotificationStates } from '../../db/sql/notification-states';
import { queueThresholdRefillJobs } from '../../db/sql/jobs';
import { enqueueNotifications, type Notification } from '../webhooks/outbox';

/**
 * A balance a move changed, for its notifications: who it is, what the move decided
 * (move-decision.ts, or the same rules evaluated by a one-statement path), and what the
 * notifications carry.
 */
export type MovedBalance = {
  accountId: string;
  denomination: string;
  id: string;
  /** The amount the move left. */
  amount: Units;
  /** `available` the move left: a pause is left only once it reaches what the pause needs. */
  after: Units;
  changed: boolean;
  crossed: Crossed;
  leaves: StateKind[];
  /** Gated events refused on the balance: the cost each was refused for, and the amount when it was. */
  refusals: { cost: Units; amount: Units }[];
  threshold: Units | null;
  /** The plan alert's inputs when `crossed.planAlert` (for its notification and its period). */
  planAlert: PlanAlert | null;
  /** When the rise took effect, if before now (a hold that lapsed earlier): a pause recorded after it stands. */
  raisedAt?: Date;
  /** false when the balance is known to be in no notification state (nothing to clear). */
  hasStates?: boolean;
  /** The `notify` spend limits the move took past their limit, with the spend just after. */
  spendReached?: { period: string; periodStart: Date; limit: Units; spent: Units }[];
};

/** `needed`: for `paused`, the available amount that is sufficient again (a refused event's cost; 0 after a drop below zero). */
type Enter = { balanceId: string; kind: string; period?: string; n: Notification[]; always?: boolean; needed?: Units };

/**
 * After balances moved inside a transaction: queue `balance_change`, the crossing notifications,
 * and a threshold refill job when `available` dropped below the refill threshold.
 *
 * What each move crossed and left was decided from facts read under the balance's row lock
 * (move-decision.ts), so a drop below zero or below the refill threshold is one crossing and
 * notifies once, whichever path moved the balance. notification_states records what the
 * balance is in (`negative`, `paused`, `refill_threshold`; `plan_threshold` per plan period):
 * a move's `leaves` are cleared (a `paused` only once `available` reaches what its pause needs:
 * the cost a gated event was refused for, zero after a drop below zero), its crossings entered.
 * A refused gated event sends `pause_balance` only while no `paused` row exists, so refusals
 * pause once until the balance is sufficient again; a drop below zero records `paused` as well.
 */
export async function notifyMoves(db: Db, companyId: string, moved: MovedBalance[], now: Date): Promise<void> {
  const out: Notification[] = [];
  const enter: Enter[] = [];
  const planEntries: Enter[] = [];
  const refusals: Enter[] = [];
  const leave: { balanceId: string; kinds: string[]; raisedAt?: Date; after: Units }[] = [];
  const refillCrossed: string[] = [];
  for (const m of moved) {
    if (m.changed) out.push({ accountId: m.accountId, denomination: m.denomination, topic: 'balance_change', balance: m.amount });
    if (m.leaves.length && m.hasStates !== false) leave.push({ balanceId: m.id, kinds: m.leaves, raisedAt: m.raisedAt, after: m.after });
    const base = { accountId: m.accountId, denomination: m.denomination, balance: m.amount };
    if (m.crossed.belowZero) {
      enter.push({ balanceId: m.id, kind: 'negative', always: true, n: [{ ...base, topic: 'negative_balance' }] });
      enter.push({ balanceId: m.id, kind: 'paused', always: true, n: [{ ...base, topic: 'pause_balance' }], needed: '0' });
    }
    if (m.crossed.belowRefillThreshold) {
      enter.push({ balanceId: m.id, kind: 'refill_threshold', always: true, n: [{ ...base, topic: 'threshold', detail: { reason: 'refill_threshold', threshold: m.threshold } }] });
      refillCrossed.push(m.id);
    }
    if (m.crossed.planAlert && m.planAlert) {
      planEntries.push({
        balanceId: m.id,
        kind: 'plan_threshold',
        period: periodKey(m.planAlert.period),
        n: [{ ...base, topic: 'threshold', detail: { reason: 'plan_threshold', threshold_alert_percentage: m.planAlert.pct, included_amount: m.planAlert.included } }],
      });
    }
    // Once per limit and period: the state row is keyed by both.
    for (const r of m.spendReached ?? []) {
      const periodStart = r.periodStart.toISOString();
      enter.push({
        balanceId: m.id,
        kind: 'spend_limit',
        period: `${r.period}:${periodStart}`,
        n: [{ ...base, topic: 'spend_limit_reached', detail: { period: r.period, period_start: periodStart, limit: r.limit, spent: r.spent } }],
      });
    }
    for (const r of m.refusals) {
      refusals.push({ balanceId: m.id, kind: 'paused', n: [{ accountId: m.accountId, denomination: m.denomination, topic: 'pause_balance', balance: r.amount }], needed: r.cost });
    }
  }
  enter.push(...planEntries, ...refusals);
  if (leave.length) {
    const flat = leave.flatMap((l) => l.kinds.map((kind) => ({ balanceId: l.balanceId, kind, raisedAt: l.raisedAt?.toISOString() ?? null, after: l.after })));
    await leaveNotificationStates(db, flat);
  }
  if (enter.length) {
    const inserted = await enterNotificationStates(db, enter.map((e) => ({ balanceId: e.balanceId, kind: e.kind, period: e.period ?? '', needed: e.needed ?? null })), now);
    // A state entered by this statement notifies once, through its first entry.
    const fresh = new Set(inserted.map((r) => stateKey(r.balance_id, r.kind, r.period)));
    for (const e of enter) {
      const k = stateKey(e.balanceId, e.kind, e.period ?? '');
      if (fresh.delete(k) || e.always) out.push(...e.n);
    }
  }
  if (refillCrossed.length) await queueThresholdRefills(db, refillCrossed, now);
  await enqueueNotifications(db, companyId, out, now);
}

/** A move decided by move-decision.ts, as `notifyMoves` takes it. */
export function movedBalance(
  at: { accountId: string; denomination: string; id: string; threshold: Units | null; planAlert: PlanAlert | null; raisedAt?: Date; hasStates?: boolean },
  plan: Pick<MovePlan, 'amount' | 'after' | 'changed' | 'crossed' | 'leaves' | 'refusals'>,
): MovedBalance {
  return { ...at, amount: plan.amount, after: plan.after, changed: plan.changed, crossed: plan.crossed, leaves: plan.leaves, refusals: plan.refusals.map(({ cost, amount }) => ({ cost, amount })) };
}

/** The plan period a `plan_threshold` state belongs to, as `planPeriodKey` writes it in SQL. */
function periodKey(period: Date): string {
  return period.toISOString();
}

/**
 * The crossing rules of move-decision.ts (`crossingsOf`), as SQL over what a move left (each
 * input an SQL expression; NULL where it does not apply), for the one-statement paths (the
 * single event, a batch's balance statement). The reference model holds both forms to one answer.
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
 * The SQL form of `leftStates` (move-decision.ts) for the states a one-statement path must hand
 * to the general path: at or above zero leaves `negative`, at or above a positive refill
 * threshold leaves `refill_threshold`. (A `paused` is left only by a rise, which those paths never make.)
 */
const leftStatesSql: { kind: StateKind; sql: (after: SQL, threshold: SQL) => SQL }[] = [
  { kind: 'negative', sql: (after) => sql`${after} >= 0` },
  { kind: 'refill_threshold', sql: (after, threshold) => sql`${threshold} > 0 and ${after} >= ${threshold}` },
];

/** Whether a state row of `kind` is one the move leaves (see `leftStates`), as SQL; NULL reads as no. */
export function leavesStateSql(c: { kind: SQL; after: SQL; threshold: SQL }): SQL {
  return sql.join(
    leftStatesSql.map((s) => sql`(${c.kind} = ${sql.raw(`'${s.kind}'`)} and ${s.sql(c.after, c.threshold)})`),
    sql` or `,
  );
}

/** The plan period a `plan_threshold` state belongs to: `last_plan_renewal` as an ISO 8601 UTC string. */
export function planPeriodKey(period: SQL): SQL {
  return sql`to_char(${period} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
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
  await queueThresholdRefillJobs(db, balanceIds.map((balanceId) => ({ id: newId('job'), balanceId })), NEXT_REFILL_SUFFIX, now);
}

const stateKey = (balanceId: string, kind: string, period: string) => `${balanceId}\u0000${kind}\u0000${period}`;

/** The rules the one-statement paths are built from (lib/db/sql/balance-move.ts). */
export const moveRules: MoveRules = { crossings: crossingRules, leaves: leavesStateSql, periodKey: planPeriodKey };
