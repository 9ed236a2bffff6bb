import { add, cmp, Decimal, isZero, neg, sub, type Units } from '../../money';

/**
 * The balance move: the one TypeScript definition of how a balance changes. Every writer that
 * moves a balance outside the one-statement paths (grants, deposits, refills, plan periods, hold
 * completions and releases, grant expiry and void, the batch loop) decides here, from the facts
 * read under the balance's row lock, and writes what the plan says (balances.ts `moveBalances`).
 * The one-statement paths (lib/db/sql/balance-move.ts) say the same rules in SQL, and hand to
 * this one whatever they cannot; the reference model (model.property.test.ts) holds every path
 * to them.
 *
 * - `available` is the amount less the live holds.
 * - The gate: a gated event passes when its cost is at most what is available when it is
 *   decided (in request order); a refused one changes nothing and is recorded as rejected.
 * - Spend limits: an event (gated or not) whose cost would take a period's spend (completed
 *   costs and live holds) past a `reject` limit is rejected first, with reason `spend_limit`.
 * - Every unit added is a credit grant. A cost is drawn from live grants by priority, then
 *   soonest expiry (never-expiring last), then oldest; past them the balance goes below zero,
 *   and a later grant first pays that debt. Amount = Σ remaining of live grants − debt.
 * - A grant expires (or takes effect) at its time exactly: a move that finds one due writes it
 *   first, as of that time, before anything else; nothing is drawn from an expired grant.
 * - Each draw, grant, expiry and void is a ledger row naming its grant (a draw past every grant
 *   names none; an event that cost nothing still has its row); a draw over several grants is a
 *   row per grant.
 * - `balance_change` is sent when the move changed the amount or what is available.
 * - What the move crossed (from where it started to where it ended, not step by step), and the
 *   states it leaves, are `crossingsOf` and `leftStates`.
 */

/** What a plan alert needs: the plan's included amount and alert percentage, and the period it is in. */
export type PlanAlert = { included: Units; pct: Units; period: Date };

/** An open credit grant of the balance (not expired, voided or used up for good). */
export type GrantFact = {
  id: string;
  amount: Units;
  /** What it has left; the head's is the balance's own count. */
  remaining: Units;
  priority: number;
  effectiveAt: Date;
  expiresAt: Date | null;
  createdAt: Date;
  /** Its amount is in the balance: it has taken effect. */
  active: boolean;
  /** Where it came from (a plan period's allowance is `plan`). */
  source?: string;
};

/** A balance as read under its row lock, before the move. */
export type Facts = {
  amount: Units;
  /** The live holds that count against `available` before the move. */
  pending: Units;
  /** The refill threshold; null when none. */
  threshold: Units | null;
  /** The plan alert's inputs, when a plan that alerts manages the balance; null otherwise. */
  planAlert: PlanAlert | null;
  /** The grant draws take from, with what it has left; null when no grant has any left. */
  head: { id: string; remaining: Units } | null;
  /** When an open grant next expires or takes effect; null when none will. */
  dueAt: Date | null;
  now: Date;
  /**
   * The balance's open grants, when the move needs them (`needsGrants`); without them, every draw
   * must fit in the head, and nothing may be due.
   */
  grants?: GrantFact[];
  /** The balance's spend limits, each with what its period has spent so far (completed costs and live holds). */
  spend?: SpendFact[];
};

/**
 * A spend limit as the move decides with it: an event whose cost would take the period's spend
 * past a `reject` limit is rejected (whether or not it is gated); passing a `notify` limit is
 * crossed once (the writer notifies it once per period). `key` names the limit and its period.
 */
export type SpendFact = { key: string; action: 'reject' | 'notify'; limit: Units; spent: Units };

/** A grant a move makes: the decision's part of it. */
export type NewGrant = { id: string; amount: Units; priority: number; effectiveAt: Date; expiresAt: Date | null };

export type MoveOp =
  /**
   * An event billed to the balance: completed (drawn) or held (pending), gated or not;
   * `recorded` when its state was written before the lock (nothing refuses it then).
   */
  | { kind: 'event'; cost: Units; state: 'complete' | 'pending'; gate: boolean; recorded?: boolean }
  /** Units taken with a ledger row of their own (not an event), drawn like a cost. */
  | { kind: 'draw'; amount: Units }
  /** Units added: a new grant, which first pays what is below zero. */
  | { kind: 'grant'; grant: NewGrant }
  /** What is left of an open grant taken away now: its expiry (a plan period ended) or its void. */
  | { kind: 'close'; grantId: string; how: 'expire' | 'void' }
  /** What is left of every open grant from `source` taken away now (a plan period's allowance when the period ends). */
  | { kind: 'close_all'; source: string; how: 'expire' | 'void' }
  /**
   * What is below zero settled outside the balance (billed as postpaid overage, or forgiven), up
   * to `upTo` (all of it when null): the amount rises to at most zero, and no grant pays it again.
   */
  | { kind: 'settle'; upTo: Units | null }
  /** A hold completed: its held cost (`held`, default `cost`) leaves the holds, its final `cost` is drawn. */
  | { kind: 'complete_hold'; cost: Units; held?: Units }
  /** Holds that stopped counting (cancelled, or lapsed): what is available rises by their cost. */
  | { kind: 'release'; amount: Units };

export type Outcome = 'complete' | 'pending' | 'rejected' | null;

/**
 * A ledger row the move writes: `op` is the index of the op it belongs to, or null for what a
 * grant's own time did (its expiry, or its taking effect), written as of `at`.
 */
export type MoveRow = { op: number | null; kind: 'draw' | 'grant' | 'expire' | 'void' | 'overage'; grantId: string | null; amount: Units; starting: Units; ending: Units; at: Date | null };

/** A grant the move changed or made: what it has left, and whether it is in effect or closed. */
export type GrantChange = { id: string; remaining: Units; active: boolean; closedAt: Date | null; voided: boolean; made: boolean };

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
  /** Grants changed or made (empty when the move drew from the head alone). */
  grants: GrantChange[];
  head: { id: string; remaining: Units } | null;
  dueAt: Date | null;
};

/** The move needs the balance's grants: it makes or closes one, one is due, or its draws may not fit in the head. */
export function needsGrants(facts: Pick<Facts, 'head' | 'dueAt' | 'now'>, ops: readonly MoveOp[]): boolean {
  if (facts.dueAt && facts.dueAt.getTime() <= facts.now.getTime()) return true;
  let drawn = '0';
  for (const op of ops) {
    if (op.kind === 'grant' || op.kind === 'close' || op.kind === 'close_all') return true;
    if (op.kind === 'event' && op.state === 'complete') drawn = add(drawn, op.cost);
    if (op.kind === 'complete_hold') drawn = add(drawn, op.cost);
    if (op.kind === 'draw') drawn = add(drawn, op.amount);
  }
  return facts.head !== null && cmp(drawn, facts.head.remaining) > 0;
}

/** The order grants are drawn in: priority, then soonest expiry (never last), then oldest. */
export function drawOrder(a: Pick<GrantFact, 'id' | 'priority' | 'expiresAt' | 'createdAt'>, b: Pick<GrantFact, 'id' | 'priority' | 'expiresAt' | 'createdAt'>): number {
  if (a.priority !== b.priority) return a.priority - b.priority;
  const ae = a.expiresAt?.getTime() ?? Infinity;
  const be = b.expiresAt?.getTime() ?? Infinity;
  if (ae !== be) return ae < be ? -1 : 1;
  if (a.createdAt.getTime() !== b.createdAt.getTime()) return a.createdAt.getTime() - b.createdAt.getTime();
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Decides a move of one balance: `ops` in order, from `facts`. Pure. */
export function decideMove(facts: Facts, ops: readonly MoveOp[]): MovePlan {
  const now = facts.now;
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
  // The open grants, in draw order, when known; the head alone otherwise.
  const open: (GrantFact & { closedAt?: Date; voided?: boolean; made?: boolean })[] | null = facts.grants
    ? facts.grants.map((g) => ({ ...g, remaining: facts.head && g.id === facts.head.id ? facts.head.remaining : g.remaining })).sort(drawOrder)
    : null;
  // The head's remaining is kept on the balance alone: written to its grant whenever the grants are.
  const touched = new Set<string>(open && facts.head ? [facts.head.id] : []);
  let head = facts.head ? { ...facts.head } : null;
  const known = () => {
    if (!open) throw new Error('decideMove needs the balance\'s grants for this move (needsGrants)');
    return open;
  };
  const row = (r: Omit<MoveRow, 'starting' | 'ending'>) => {
    const starting = amount;
    amount = add(amount, r.amount);
    rows.push({ ...r, starting, ending: amount });
  };
  const live = () => known().filter((g) => g.active && !g.closedAt);
  const firstWithUnits = () => live().find((g) => cmp(g.remaining, '0') > 0) ?? null;
  const debt = () => sub(live().reduce((s, g) => add(s, g.remaining), '0'), amount);

  const draw = (op: number, cost: Units) => {
    usage = true;
    if (!open) {
      if (head && cmp(cost, head.remaining) > 0) known();
      rows.push({ op, kind: 'draw', grantId: head?.id ?? null, amount: neg(cost), starting: amount, ending: (amount = sub(amount, cost)), at: null });
      if (head) head.remaining = sub(head.remaining, cost);
      return;
    }
    let left = cost;
    if (isZero(cost)) row({ op, kind: 'draw', grantId: firstWithUnits()?.id ?? null, amount: neg(cost), at: null });
    while (cmp(left, '0') > 0) {
      const g = firstWithUnits();
      if (!g) {
        row({ op, kind: 'draw', grantId: null, amount: neg(left), at: null });
        break;
      }
      const take = cmp(left, g.remaining) <= 0 ? left : g.remaining;
      row({ op, kind: 'draw', grantId: g.id, amount: neg(take), at: null });
      g.remaining = sub(g.remaining, take);
      touched.add(g.id);
      left = sub(left, take);
    }
  };
  const takeEffect = (g: GrantFact, op: number | null, at: Date | null) => {
    const owed = debt();
    const pays = cmp(owed, '0') > 0 ? (cmp(owed, g.amount) < 0 ? owed : g.amount) : '0';
    row({ op, kind: 'grant', grantId: g.id, amount: g.amount, at });
    g.remaining = sub(g.amount, pays);
    g.active = true;
    touched.add(g.id);
  };
  const close = (g: (typeof known extends () => infer T ? T : never)[number], how: 'expire' | 'void', op: number | null, at: Date) => {
    if (g.active && cmp(g.remaining, '0') > 0) row({ op, kind: how, grantId: g.id, amount: neg(g.remaining), at: op === null ? at : null });
    g.remaining = '0';
    g.closedAt = at;
    if (how === 'void') g.voided = true;
    touched.add(g.id);
  };

  // What the grants' own times did since the balance was last written, as of those times.
  if (facts.dueAt && facts.dueAt.getTime() <= now.getTime()) {
    const times: { at: Date; g: (typeof open & object)[number]; what: 'expire' | 'effect' }[] = [];
    for (const g of known()) {
      if (!g.active && g.effectiveAt.getTime() <= now.getTime()) times.push({ at: g.effectiveAt, g, what: 'effect' });
      if (g.expiresAt && g.expiresAt.getTime() <= now.getTime()) times.push({ at: g.expiresAt, g, what: 'expire' });
    }
    // In time order; at one instant, expiries first (what expired was drawn before it), and a
    // grant takes effect before it can expire.
    times.sort((x, y) => x.at.getTime() - y.at.getTime() || (x.g === y.g ? (x.what === 'effect' ? -1 : 1) : x.what === 'expire' ? -1 : y.what === 'expire' ? 1 : 0));
    for (const t of times) {
      if (t.what === 'effect') takeEffect(t.g, null, t.at);
      else close(t.g, 'expire', null, t.at);
    }
  }

  for (const [i, op] of ops.entries()) {
    outcomes.push(null);
    reasons.push(null);
    switch (op.kind) {
      case 'event':
        if (!op.recorded && cmp(op.cost, '0') > 0 && spend.some((l) => l.action === 'reject' && cmp(add(l.spent, op.cost), l.limit) > 0)) {
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
          draw(i, op.cost);
          spent(op.cost);
        }
        break;
      case 'draw':
        draw(i, op.amount);
        break;
      case 'complete_hold':
        pending = sub(pending, op.held ?? op.cost);
        draw(i, op.cost);
        spent(sub(op.cost, op.held ?? op.cost));
        break;
      case 'release':
        pending = sub(pending, op.amount);
        spent(neg(op.amount));
        break;
      case 'grant': {
        const g = { ...op.grant, remaining: '0', createdAt: now, active: false, made: true };
        known().push(g);
        known().sort(drawOrder);
        touched.add(g.id);
        if (g.effectiveAt.getTime() <= now.getTime()) {
          takeEffect(g, i, null);
          // Made for a time already over (a plan period paid for after it ended): it pays what is
          // owed, and the rest expires at once.
          if (g.expiresAt && g.expiresAt.getTime() <= now.getTime()) close(g, 'expire', null, now);
        }
        break;
      }
      case 'close': {
        const g = known().find((x) => x.id === op.grantId && !x.closedAt);
        if (g) close(g, op.how, i, now);
        break;
      }
      case 'close_all':
        for (const g of known().filter((x) => x.source === op.source && !x.closedAt)) close(g, op.how, i, now);
        break;
      case 'settle': {
        // Below zero, no grant has anything left (a grant first pays what is owed).
        const owed = cmp(amount, '0') < 0 ? neg(amount) : '0';
        const settled = op.upTo !== null && cmp(op.upTo, owed) < 0 ? op.upTo : owed;
        if (cmp(settled, '0') > 0) row({ op: i, kind: 'overage', grantId: null, amount: settled, at: null });
        break;
      }
    }
  }

  let grants: GrantChange[] = [];
  let dueAt = facts.dueAt;
  if (open) {
    // A grant in effect with nothing left never changes again: it is closed.
    for (const g of open) {
      if (g.active && !g.closedAt && isZero(g.remaining) && touched.has(g.id)) g.closedAt = now;
    }
    head = firstWithUnits();
    head = head ? { id: head.id, remaining: head.remaining } : null;
    const pendingTimes = open.filter((g) => !g.closedAt).map((g) => (g.active ? g.expiresAt : g.effectiveAt)).filter((t): t is Date => t !== null);
    dueAt = pendingTimes.length ? new Date(Math.min(...pendingTimes.map((t) => t.getTime()))) : null;
    grants = open.filter((g) => touched.has(g.id)).map((g) => ({ id: g.id, remaining: g.remaining, active: g.active, closedAt: g.closedAt ?? null, voided: !!g.voided, made: !!g.made }));
  }
  const before = sub(facts.amount, facts.pending);
  const after = sub(amount, pending);
  const changed = cmp(amount, facts.amount) !== 0 || cmp(pending, facts.pending) !== 0;
  const crossed = crossingsOf({ before, after, threshold: facts.threshold, startAmount: facts.amount, amount, planAlert: usage ? facts.planAlert : null });
  const leaves = cmp(after, before) === 0 ? [] : leftStates.filter((s) => s.left(after, before, facts.threshold)).map((s) => s.kind);
  return { outcomes, rows, start: { amount: facts.amount, pending: facts.pending }, amount, pending, before, after, changed, crossed, leaves, refusals, reasons, spendCrossed, grants, head, dueAt };
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
