import { add, cmp, Decimal, isZero, neg, sub, type Units } from '../../money';

/**
 * The balance move: the one TypeScript definition of how a balance changes. Every writer that
 * moves a balance outside the one-statement paths (grants, deposits, refills, plan resets, hold
 * completions and releases, the gated batch loop) decides here, from the facts read under the
 * balance's row lock, and writes what the plan says (balances/moves.ts). The one-statement paths
 * (lib/db/sql/balance-move.ts) say the same rules in SQL, `crossingRules` and `leftStates` below
 * being the single source of both, and the reference model (model.property.test.ts) holds every
 * path to them.
 *
 * - `available` is the amount less the live holds.
 * - The gate: a gated event passes when its cost is at most what is available when it is
 *   decided (in request order); a refused one changes nothing and is recorded as rejected.
 * - Spend limits: an event (gated or not) whose cost would take a period's spend (completed
 *   costs and live holds) past a `reject` limit is rejected first, with reason `spend_limit`.
 * - Each completed billed event and each change is one ledger row, whose starting and ending
 *   balance are the amount just before and just after it (an event that cost nothing too).
 * - `balance_change` is sent when the move changed the amount or what is available.
 * - What the move crossed (from where it started to where it ended, not step by step), and the
 *   states it leaves, are `crossingRules` and `leftStates`.
 */

/** What a plan alert needs: the plan's included amount and alert percentage, and the period it is in. */
export type PlanAlert = { included: Units; pct: Units; period: Date };

/** A balance as read under its row lock, before the move. */
export type Facts = {
  amount: Units;
  /** The live holds that count against `available` before the move. */
  pending: Units;
  /** The refill threshold; null when none. */
  threshold: Units | null;
  /** The plan alert's inputs, when a plan that alerts manages the balance; null otherwise. */
  planAlert: PlanAlert | null;
  /** The balance's spend limits, each with what its period has spent so far (completed costs and live holds). */
  spend?: SpendFact[];
};

/**
 * A spend limit as the move decides with it: an event whose cost would take the period's spend
 * past a `reject` limit is rejected (whether or not it is gated); passing a `notify` limit is
 * crossed once (the writer notifies it once per period). `key` names the limit and its period.
 */
export type SpendFact = { key: string; action: 'reject' | 'notify'; limit: Units; spent: Units };

export type MoveOp =
  /** An event billed to the balance: completed (a ledger row) or held (pending), gated or not. */
  | { kind: 'event'; cost: Units; state: 'complete' | 'pending'; gate: boolean }
  /** Units added or taken with a ledger row of their own: a grant, a deposit, a refill, a cancellation. */
  | { kind: 'change'; amount: Units }
  /**
   * Sets the amount to `level` (a plan's included units at a renewal or a change): one ledger row
   * of the difference, none when there is none. With `measured` (the amount when the plan charge
   * was priced), the balance moves by level − measured, so usage recorded since counts against
   * the new level. A reset is no usage: it raises no plan alert.
   */
  | { kind: 'level'; level: Units; measured?: Units }
  /** A hold completed: its held cost (`held`, default `cost`) leaves the holds, its final `cost` is taken from the amount (a ledger row). */
  | { kind: 'complete_hold'; cost: Units; held?: Units }
  /** Holds that stopped counting (cancelled, or lapsed): what is available rises by their cost. */
  | { kind: 'release'; amount: Units };

export type Outcome = 'complete' | 'pending' | 'rejected' | null;

/** A ledger row the move writes: `op` is the index of the op it belongs to. */
export type MoveRow = { op: number; amount: Units; starting: Units; ending: Units };

/** What the move crossed: each notifies once per crossing. */
export type Crossed = { belowZero: boolean; belowRefillThreshold: boolean; planAlert: boolean };

/** The states a balance can be in (notification_states.kind). */
export type StateKind = 'negative' | 'paused' | 'refill_threshold' | 'plan_threshold';

export type MovePlan = {
  /** Per op: an event's state (rejected when the gate refused it); null for the other ops. */
  outcomes: Outcome[];
  rows: MoveRow[];
  start: { amount: Units; pending: Units };
  amount: Units;
  pending: Units;
  /** `available` before and after the move. */
  before: Units;
  after: Units;
  /** Whether the move is a `balance_change`: the amount or what is available changed. */
  changed: boolean;
  crossed: Crossed;
  /** States the move leaves, by where it leaves `available` (`paused` subject to what its pause needs). */
  leaves: StateKind[];
  /** Gated events refused: the cost each was refused for, and the amount when it was. */
  refusals: { op: number; cost: Units; amount: Units }[];
  /** Per op: why an event was rejected (null for the others). */
  reasons: ('insufficient_balance' | 'spend_limit' | null)[];
  /** The `notify` spend limits the move took past their limit, with the spend just after. */
  spendCrossed: { key: string; spent: Units }[];
};

/** Decides a move of one balance: `ops` in order, from `facts`. Pure. */
export function decideMove(facts: Facts, ops: readonly MoveOp[]): MovePlan {
  let amount = facts.amount;
  let pending = facts.pending;
  let usage = false;
  const outcomes: Outcome[] = [];
  const rows: MoveRow[] = [];
  const refusals: MovePlan['refusals'] = [];
  const reasons: MovePlan['reasons'] = [];
  const spend = (facts.spend ?? []).map((l) => ({ ...l }));
  const spendCrossed: MovePlan['spendCrossed'] = [];
  const spent = (delta: Units) => {
    for (const l of spend) {
      const before = l.spent;
      l.spent = add(l.spent, delta);
      if (l.action === 'notify' && cmp(before, l.limit) <= 0 && cmp(l.spent, l.limit) > 0 && !spendCrossed.some((c) => c.key === l.key)) spendCrossed.push({ key: l.key, spent: l.spent });
    }
  };
  const take = (op: number, delta: Units) => {
    const starting = amount;
    amount = add(amount, delta);
    rows.push({ op, amount: delta, starting, ending: amount });
  };
  for (const [i, op] of ops.entries()) {
    outcomes.push(null);
    reasons.push(null);
    switch (op.kind) {
      case 'event':
        if (cmp(op.cost, '0') > 0 && spend.some((l) => l.action === 'reject' && cmp(add(l.spent, op.cost), l.limit) > 0)) {
          outcomes[i] = 'rejected';
          reasons[i] = 'spend_limit';
        } else if (op.gate && cmp(op.cost, sub(amount, pending)) > 0) {
          outcomes[i] = 'rejected';
          reasons[i] = 'insufficient_balance';
          refusals.push({ op: i, cost: op.cost, amount });
        } else if (op.state === 'pending') {
          outcomes[i] = 'pending';
          pending = add(pending, op.cost);
          spent(op.cost);
        } else {
          outcomes[i] = 'complete';
          usage = true;
          take(i, neg(op.cost));
          spent(op.cost);
        }
        break;
      case 'change':
        usage = true;
        take(i, op.amount);
        break;
      case 'level': {
        const delta = sub(op.level, op.measured ?? amount);
        if (!isZero(delta)) take(i, delta);
        break;
      }
      case 'complete_hold':
        usage = true;
        pending = sub(pending, op.held ?? op.cost);
        take(i, neg(op.cost));
        spent(sub(op.cost, op.held ?? op.cost));
        break;
      case 'release':
        pending = sub(pending, op.amount);
        spent(neg(op.amount));
        break;
    }
  }
  const before = sub(facts.amount, facts.pending);
  const after = sub(amount, pending);
  const changed = cmp(amount, facts.amount) !== 0 || cmp(pending, facts.pending) !== 0;
  const crossed = crossingsOf({ before, after, threshold: facts.threshold, startAmount: facts.amount, amount, planAlert: usage ? facts.planAlert : null });
  const leaves = cmp(after, before) === 0 ? [] : leftStates.filter((s) => s.left(after, before, facts.threshold)).map((s) => s.kind);
  return { outcomes, rows, start: { amount: facts.amount, pending: facts.pending }, amount, pending, before, after, changed, crossed, leaves, refusals, reasons, spendCrossed };
}

/**
 * The crossing rules (their SQL form is `crossingRules` in crossings.ts, evaluated by the
 * one-statement paths; the reference model holds the two to one answer):
 * - below zero: `available` went from zero or more to below zero;
 * - below the refill threshold: `available` went from at or above a positive threshold to below it;
 * - the plan alert: usage of a plan's included units (included − amount) reached the plan's
 *   percentage with this fall of the amount (once per plan period: the state row keeps it).
 */
export function crossingsOf(c: { before: Units; after: Units; threshold: Units | null; startAmount: Units; amount: Units; planAlert: PlanAlert | null }): Crossed {
  const { before, after, threshold, planAlert } = c;
  return {
    belowZero: cmp(before, '0') >= 0 && cmp(after, '0') < 0,
    belowRefillThreshold: threshold !== null && cmp(threshold, '0') > 0 && cmp(before, threshold) >= 0 && cmp(after, threshold) < 0,
    planAlert:
      planAlert !== null &&
      cmp(c.amount, c.startAmount) < 0 &&
      cmp(planAlert.included, '0') > 0 &&
      new Decimal(planAlert.included).minus(c.amount).gte(new Decimal(planAlert.included).times(planAlert.pct).div(100)),
  };
}

/**
 * The states a move leaves by where it leaves `available`: at or above zero leaves `negative`, at
 * or above a positive refill threshold leaves `refill_threshold`, and a rise leaves `paused` (when
 * it reaches what the pause needs: the cost a gated event was refused for, 0 after a drop below
 * zero; the writer checks that against the stored state). Their SQL form, for the one-statement
 * paths, is `leavesStateSql` in crossings.ts.
 */
export const leftStates: { kind: StateKind; left: (after: Units, before: Units, threshold: Units | null) => boolean }[] = [
  { kind: 'negative', left: (after) => cmp(after, '0') >= 0 },
  { kind: 'refill_threshold', left: (after, _before, threshold) => threshold !== null && cmp(threshold, '0') > 0 && cmp(after, threshold) >= 0 },
  { kind: 'paused', left: (after, before) => cmp(after, before) > 0 },
];
