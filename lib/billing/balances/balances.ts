import { asc, eq } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../../db/client';
import { balances, transactions, type GrantCategory, type GrantSource, type StoredRefillChange } from '../../db/schema';
import { newId } from '../../ids';
import { notFound } from '../../errors';
import { add, cmp, Decimal, sub, unitsOut, type Units } from '../../money';
import { movedBalance, notifyMoves } from './crossings';
import { decideMove, needsGrants, type Facts, type GrantFact, type MoveOp, type MovePlan, type MoveRow, type PlanAlert } from './move-decision';
import { insertLedgerRows, lockBalances, nextExpirySql, openGrants, setBalances, writeGrants, type GrantInsert, type LockedBalance, type OpenGrant } from '../../db/sql/balance-move';
import { keysetPage, type PageQuery } from '../../db/keyset';
import { addSpend } from '../../db/sql/spend';
import { spendFacts, spendKey, type SpendLimitFact } from './spend-limits';

export type BalanceRow = typeof balances.$inferSelect;
/** When the soonest of a balance's live grants expires, and how many units expire then. */
export type NextExpiry = { expires_at: string; amount: string };
export type Balance = BalanceRow & { pending: Units; nextExpiry: NextExpiry | null };
export type LedgerRow = typeof transactions.$inferSelect;

export function serializeBalance(b: Balance) {
  return {
    id: b.id,
    account_id: b.accountId,
    denomination: b.denomination,
    amount: unitsOut(b.amount),
    pending: unitsOut(b.pending),
    available: unitsOut(sub(b.amount, b.pending)),
    refill_threshold: unitsOut(b.refillThreshold),
    refill_amount: unitsOut(b.refillAmount),
    refill_usd_amount: b.refillUsdAmount ?? 0,
    refill_on_day: b.refillOnDay ?? '',
    last_periodic_refill: b.lastPeriodicRefill?.toISOString() ?? null,
    next_periodic_refill: b.nextPeriodicRefill?.toISOString() ?? null,
    refill_expires_after_days: b.refillExpiresAfterDays ?? null,
    refill_max_charges_per_month: b.refillMaxChargesPerMonth ?? null,
    // Stored with the amount as an exact decimal string; out as a JSON number like every unit.
    scheduled_refill_change: b.scheduledRefill ? { ...b.scheduledRefill, amount: unitsOut(b.scheduledRefill.amount) } : null,
    managed_by_plan_id: b.managedByPlanId,
    next_expiry: b.nextExpiry ? { expires_at: b.nextExpiry.expires_at, amount: unitsOut(b.nextExpiry.amount) } : null,
    created_at: b.createdAt.toISOString(),
    updated_at: b.updatedAt?.toISOString() ?? null,
  };
}

export function serializeTransaction(t: LedgerRow) {
  return {
    id: t.id,
    account_id: t.accountId,
    denomination: t.denomination,
    type: t.type,
    description: t.description,
    amount: unitsOut(t.amount),
    starting_balance: unitsOut(t.startingBalance),
    ending_balance: unitsOut(t.endingBalance),
    event_id: t.eventId,
    charge_id: t.chargeId,
    grant_id: t.grantId,
    created_at: t.createdAt.toISOString(),
  };
}

/** Live holds: pending events that have not reached `expires_at`, whether or not the worker ran. */
const livePending = (now: Date) => sql`coalesce((
  select sum(e.cost_amount) from events e
  where e.account_id = b.account_id and e.cost_denomination = b.denomination
    and e.state = 'pending' and e.expires_at > ${now.toISOString()}::timestamptz), 0)::text`;

/** A balance row as a statement returned it (the table's column names), with its live holds as `pending`. */
export function balanceFromRow(r: Record<string, unknown>): Balance {
  const d = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    companyId: r.company_id as string,
    denomination: r.denomination as string,
    amount: String(r.amount),
    refillThreshold: (r.refill_threshold as string | null) ?? null,
    refillAmount: (r.refill_amount as string | null) ?? null,
    refillUsdAmount: r.refill_usd_amount === null || r.refill_usd_amount === undefined ? null : Number(r.refill_usd_amount),
    refillOnDay: (r.refill_on_day as string | null) ?? null,
    refillMaxChargesPerMonth: r.refill_max_charges_per_month === null || r.refill_max_charges_per_month === undefined ? null : Number(r.refill_max_charges_per_month),
    lastPeriodicRefill: d(r.last_periodic_refill),
    nextPeriodicRefill: d(r.next_periodic_refill),
    scheduledRefill: (r.scheduled_refill as StoredRefillChange | null) ?? null,
    refillExpiresAfterDays: r.refill_expires_after_days === null || r.refill_expires_after_days === undefined ? null : Number(r.refill_expires_after_days),
    thresholdRefillOff: r.threshold_refill_off === true,
    managedByPlanId: (r.managed_by_plan_id as string | null) ?? null,
    includedAmount: (r.included_amount as string | null) ?? null,
    headGrantId: (r.head_grant_id as string | null) ?? null,
    headRemaining: r.head_remaining === null || r.head_remaining === undefined ? null : String(r.head_remaining),
    grantsDueAt: d(r.grants_due_at),
    createdAt: new Date(r.created_at as string),
    updatedAt: d(r.updated_at),
    pending: String(r.pending),
    nextExpiry: r.next_expiry ? (typeof r.next_expiry === 'string' ? JSON.parse(r.next_expiry) : r.next_expiry) as NextExpiry : null,
  };
}

export async function findBalance({ db, accountId, denomination, now }: { db: Db; accountId: string; denomination: string; now: Date }) {
  const rows = await query(db, sql`select b.*, ${livePending(now)} as pending, ${nextExpirySql(sql`b`, sql`${now.toISOString()}::timestamptz`)} as next_expiry from balances b where b.account_id = ${accountId} and b.denomination = ${denomination}`);
  return rows[0] ? balanceFromRow(rows[0]) : null;
}

export async function getBalance(args: { db: Db; accountId: string; denomination: string; now: Date }): Promise<Balance> {
  const found = await findBalance(args);
  if (!found) throw notFound('balance', 'denomination');
  return found;
}

export async function listBalances({ db, accountId, now }: { db: Db; accountId: string; now: Date }) {
  const rows = await query(db, sql`select b.*, ${livePending(now)} as pending, ${nextExpirySql(sql`b`, sql`${now.toISOString()}::timestamptz`)} as next_expiry from balances b where b.account_id = ${accountId} order by b.denomination`);
  return rows.map(balanceFromRow);
}

/** Creates the balance at 0 when missing (idempotent; concurrent callers are safe). */
export async function ensureBalances(db: Db, items: { accountId: string; companyId: string; denomination: string }[], now: Date) {
  if (!items.length) return;
  // Sorted, so concurrent batches take index locks in one order.
  const unique = [...new Map(items.map((i) => [`${i.accountId}\u0000${i.denomination}`, i])).values()].sort((a, b) =>
    a.accountId === b.accountId ? (a.denomination < b.denomination ? -1 : 1) : a.accountId < b.accountId ? -1 : 1,
  );
  const at = now.toISOString();
  await query(
    db,
    sql`insert into balances (id, account_id, company_id, denomination, amount, created_at, updated_at)
      select id, account_id, company_id, denomination, 0, ${at}::timestamptz, ${at}::timestamptz
      from unnest(${textArray(unique.map(() => newId('b')))}, ${textArray(unique.map((i) => i.accountId))}, ${textArray(unique.map((i) => i.companyId))},
        ${textArray(unique.map((i) => i.denomination))}) as u(id, account_id, company_id, denomination)
      -- Existing balances are left out by a plain read first: checking them against the unique
      -- index would wait for any transaction that is moving them (a batch holding their locks).
      where not exists (select 1 from balances b where b.account_id = u.account_id and b.denomination = u.denomination)
      on conflict do nothing`,
  );
}

/** A ledger row's own fields: what the move is, as the ledger shows it. */
export type LedgerFields = { type: LedgerRow['type']; description: string; eventId?: string | null; chargeId?: string | null };

/** What a grant is beyond its amount and times (its decision's part is in the op). */
export type GrantFields = { category: GrantCategory; source: GrantSource; costBasis: Units | null };

/**
 * A move of one balance: its ops in order (move-decision.ts), each op that writes a ledger row
 * with its row's fields, a `grant` op with what its grant is. Ops `release` and `complete_hold`
 * are holds whose events this transaction already flipped: the holds read under the lock no
 * longer count them, so the move starts from that read plus their cost. `order` places an op's
 * ledger rows among all the moves' rows (request order in a batch); by default, move by move.
 */
export type BalanceMove = {
  accountId: string;
  denomination: string;
  ops: { op: MoveOp; ledger?: LedgerFields; grant?: GrantFields; order?: number }[];
  /** When a rise took effect, if before now (holds that lapsed earlier). */
  raisedAt?: Date;
  /** Holds this transaction placed before the lock that the ops place again (a batch's early rows). */
  ownHolds?: Units;
};

export type MoveResult = { balanceId: string; plan: MovePlan; rows: LedgerRow[] };

/**
 * The general balance writer: locks the balances in (account, denomination) order, reads what
 * each move decides from after the locks are held (amount, live holds, refill threshold, plan
 * alert, notification states, the head grant, and the open grants when the move needs them),
 * decides each move (move-decision.ts), and writes what it decided: the grants made and changed,
 * the ledger rows, the balances, the notifications and crossing states, a threshold refill's
 * job. Inside the caller's transaction; balances are created when missing.
 */
export async function moveBalances(db: Db, companyId: string, moves: BalanceMove[], now: Date): Promise<MoveResult[]> {
  if (!moves.length) return [];
  // One move per balance: each is decided from the facts read once under its lock.
  if (new Set(moves.map((m) => pairKey(m.accountId, m.denomination))).size < moves.length) throw new Error('moveBalances takes one move per balance');
  const pairs = moves.map((m) => [m.accountId, m.denomination] as const);
  let facts = new Map<string, LockedBalance>();
  // Made when missing, then locked; made again should one be deleted in between (a balance nothing used yet may be).
  for (let attempt = 0; facts.size < pairs.length; attempt++) {
    if (attempt === 3) throw new Error('a balance to move kept disappearing before it could be locked');
    await ensureBalances(db, moves.map((m) => ({ accountId: m.accountId, companyId, denomination: m.denomination })), now);
    facts = new Map((await lockBalances(db, pairs, now)).map((b) => [pairKey(b.account_id, b.denomination), b]));
  }
  const before = moves.map((m) => {
    const b = facts.get(pairKey(m.accountId, m.denomination))!;
    const flipped = m.ops.reduce((sum, { op }) => (op.kind === 'release' ? add(sum, op.amount) : op.kind === 'complete_hold' ? add(sum, op.held ?? op.cost) : sum), '0');
    const read: Facts = { ...factsOf(b, now), pending: sub(add(b.pending, flipped), m.ownHolds ?? '0') };
    return { m, b, facts: read };
  });
  // The spend limits of the balances that have any, with their periods' spend before the moves.
  const limited = before.filter(({ b }) => b.limited);
  const spend = limited.length ? await spendFacts(db, limited.map(({ m, facts: f }) => ({ accountId: m.accountId, denomination: m.denomination, pending: f.pending })), now) : new Map<string, SpendLimitFact[]>();
  for (const x of limited) x.facts.spend = spend.get(spendKey(x.m.accountId, x.m.denomination)) ?? [];
  // The open grants, read for the moves that need them.
  const need = before.filter(({ m, facts: f }) => needsGrants(f, m.ops.map((o) => o.op)));
  const grants = await openGrants(db, need.map(({ b }) => b.id));
  const byBalance = new Map<string, OpenGrant[]>();
  for (const g of grants) byBalance.set(g.balance_id, [...(byBalance.get(g.balance_id) ?? []), g]);
  // What a row of a grant's own time names: the grants read, and the grants the moves make.
  const loaded = new Map<string, Pick<OpenGrant, 'id' | 'description' | 'source' | 'charge_id'>>(grants.map((g) => [g.id, g]));
  for (const m of moves)
    for (const o of m.ops) if (o.op.kind === 'grant' && o.grant && o.ledger) loaded.set(o.op.grant.id, { id: o.op.grant.id, description: o.ledger.description, source: o.grant.source, charge_id: o.ledger.chargeId ?? null });
  const decided = before.map(({ m, b, facts: f }) => {
    const withGrants = need.some((n) => n.b.id === b.id) ? { ...f, grants: (byBalance.get(b.id) ?? []).map(grantFactOf) } : f;
    return { m, b, plan: decideMove(withGrants, m.ops.map((o) => o.op)), known: withGrants.grants !== undefined };
  });

  const made: GrantInsert[] = [];
  const changed: { id: string; remaining: string; active: boolean; closedAt: Date | null; voided: boolean }[] = [];
  for (const { m, b, plan } of decided) {
    for (const g of plan.grants) {
      if (!g.made) {
        changed.push(g);
        continue;
      }
      const i = m.ops.findIndex((o) => o.op.kind === 'grant' && o.op.grant.id === g.id);
      const { op, grant, ledger } = m.ops[i] as { op: Extract<MoveOp, { kind: 'grant' }>; grant: GrantFields; ledger: LedgerFields };
      made.push({
        id: g.id,
        accountId: m.accountId,
        balanceId: b.id,
        denomination: m.denomination,
        amount: op.grant.amount,
        remaining: g.remaining,
        category: grant.category,
        source: grant.source,
        priority: op.grant.priority,
        effectiveAt: op.grant.effectiveAt,
        expiresAt: op.grant.expiresAt,
        costBasis: grant.costBasis,
        active: g.active,
        closedAt: g.closedAt,
        chargeId: ledger.chargeId ?? null,
        description: ledger.description,
      });
    }
  }
  await writeGrants(db, { companyId, now }, made, changed);

  const ledger = decided.flatMap(({ m, b, plan }) =>
    plan.rows.map((r, n) => {
      const fields = ledgerFieldsOf(r, m, loaded);
      const order = r.op === null ? -1 : (m.ops[r.op].order ?? null);
      return {
        order,
        n,
        row: { accountId: m.accountId, balanceId: b.id, denomination: m.denomination, type: fields.type, description: fields.description, amount: r.amount, startingBalance: r.starting, endingBalance: r.ending, eventId: fields.eventId ?? null, chargeId: fields.chargeId ?? null, grantId: r.grantId, createdAt: r.at },
      };
    }),
  );
  // Rows in the order their ops were given across the moves, when the caller said (a batch's request order).
  if (ledger.some((l) => l.order !== null)) ledger.sort((x, y) => (x.order ?? 0) - (y.order ?? 0) || x.n - y.n);
  const written = ledger.length ? await insertLedgerRows(db, { companyId, now }, ledger.map((l) => l.row)) : [];
  const rowsById = new Map(written.map((w) => [w, ledgerRowFromRaw(w)]));
  const moved = decided
    .filter(({ plan, known, b }) => cmp(plan.amount, plan.start.amount) !== 0 || known || (plan.head?.remaining ?? null) !== b.head_remaining)
    .map(({ b, plan, known }) => ({ id: b.id, amount: plan.amount, headGrantId: plan.head?.id ?? null, headRemaining: plan.head?.remaining ?? null, grantsDueAt: plan.dueAt, grantsKnown: known }));
  if (moved.length) await setBalances(db, moved, now);
  // What completed events cost, counted toward the periods of the balances' limits.
  const completed = decided.flatMap(({ m, b, plan }) => {
    if (!b.limited) return [];
    const amount = m.ops.reduce((sum, { op }, i) => (op.kind === 'event' && plan.outcomes[i] === 'complete' ? add(sum, op.cost) : op.kind === 'complete_hold' ? add(sum, op.cost) : sum), '0');
    return cmp(amount, '0') === 0 ? [] : [{ accountId: m.accountId, denomination: m.denomination, amount }];
  });
  await addSpend(db, completed, now);
  await notifyMoves(
    db,
    companyId,
    decided.map(({ m, b, plan }) => {
      const limits = spend.get(spendKey(m.accountId, m.denomination)) ?? [];
      const reached = plan.spendCrossed.flatMap((c) => limits.filter((l) => l.key === c.key).map((l) => ({ period: l.period, periodStart: l.periodStart, limit: l.limit, spent: c.spent })));
      return { ...movedBalance({ accountId: m.accountId, denomination: m.denomination, id: b.id, threshold: b.refill_threshold, planAlert: planAlertOf(b), raisedAt: m.raisedAt, hasStates: b.has_states }, plan), spendReached: reached };
    }),
    now,
  );
  // Each move's rows, in its own order.
  const ownRows = new Map<string, LedgerRow[]>();
  for (const [i, l] of ledger.entries()) ownRows.set(l.row.balanceId, [...(ownRows.get(l.row.balanceId) ?? []), rowsById.get(written[i])!]);
  return decided.map(({ b, plan }) => ({ balanceId: b.id, plan, rows: (ownRows.get(b.id) ?? []).sort((x, y) => (x.id < y.id ? -1 : 1)) }));
}

/** A locked balance as the move decides from it (without its grants). */
function factsOf(b: LockedBalance, now: Date): Facts {
  return {
    amount: b.amount,
    pending: b.pending,
    threshold: b.refill_threshold,
    planAlert: planAlertOf(b),
    head: b.head_grant_id && b.head_remaining !== null ? { id: b.head_grant_id, remaining: b.head_remaining } : null,
    dueAt: b.grants_due_at ? new Date(b.grants_due_at) : null,
    now,
  };
}

function grantFactOf(g: OpenGrant): GrantFact {
  return {
    id: g.id,
    amount: g.amount,
    remaining: g.remaining,
    priority: g.priority,
    effectiveAt: new Date(g.effective_at),
    expiresAt: g.expires_at ? new Date(g.expires_at) : null,
    createdAt: new Date(g.created_at),
    active: g.active,
    source: g.source,
  };
}

/** The ledger type a grant's row has when it takes effect later than it was made, by where it came from. */
const TYPE_OF_SOURCE: Record<string, LedgerRow['type']> = { plan: 'plan_grant', deposit: 'deposit', refill: 'refill', grant: 'grant' };

/** A decided row's ledger fields: its op's, or, for what a grant's own time did, the grant's. */
function ledgerFieldsOf(r: MoveRow, m: BalanceMove, loaded: Map<string, Pick<OpenGrant, 'id' | 'description' | 'source' | 'charge_id'>>): LedgerFields {
  if (r.op !== null) {
    const fields = m.ops[r.op].ledger;
    if (!fields) throw new Error(`a ${m.ops[r.op].op.kind} op that writes a ledger row needs its ledger fields`);
    return fields;
  }
  const g = loaded.get(r.grantId!)!;
  if (r.kind === 'expire') return { type: 'expire', description: `Expiry of grant ${g.id} (${g.description})`, chargeId: g.charge_id };
  return { type: TYPE_OF_SOURCE[g.source] ?? 'grant', description: g.description, chargeId: g.charge_id };
}

/** The plan alert inputs of a balance read under its lock; null when no plan that alerts manages it. */
export function planAlertOf(b: Pick<LockedBalance, 'included' | 'pct' | 'period'>): PlanAlert | null {
  return b.included !== null && b.pct !== null && b.period !== null && cmp(b.included, '0') > 0 ? { included: b.included, pct: b.pct, period: new Date(b.period) } : null;
}

/** A grant to make: its units, what they are, and when they count. */
export type GrantInput = {
  companyId: string;
  accountId: string;
  denomination: string;
  amount: Units;
  category: GrantCategory;
  source: GrantSource;
  costBasis?: Units | null;
  priority?: number;
  effectiveAt?: Date;
  expiresAt?: Date | null;
  id?: string;
} & LedgerFields;

/** Makes a credit grant on a balance (created when missing): one ledger row, when it takes effect. */
export async function grantUnits(db: Db, input: GrantInput, now: Date): Promise<{ grantId: string; row: LedgerRow | null; balanceId: string }> {
  const { companyId, accountId, denomination, amount, category, source, costBasis = null, priority = DEFAULT_PRIORITY, effectiveAt = now, expiresAt = null, id = newId('cg'), ...ledger } = input;
  const [r] = await moveBalances(db, companyId, [{ accountId, denomination, ops: [{ op: { kind: 'grant', grant: { id, amount, priority, effectiveAt, expiresAt } }, ledger, grant: { category, source, costBasis } }] }], now);
  return { grantId: id, row: r.rows[0] ?? null, balanceId: r.balanceId };
}

/** Takes away what is left of an open grant now: a plan period's allowance at its end (`expire`), or a void. */
export async function closeGrant(db: Db, at: { companyId: string; accountId: string; denomination: string; grantId: string; how: 'expire' | 'void' } & Pick<LedgerFields, 'description' | 'chargeId'>, now: Date): Promise<LedgerRow | null> {
  const { companyId, accountId, denomination, grantId, how, ...fields } = at;
  const [r] = await moveBalances(db, companyId, [{ accountId, denomination, ops: [{ op: { kind: 'close', grantId, how }, ledger: { type: how, ...fields } }] }], now);
  return r.rows[0] ?? null;
}

/** Draws units from a balance with a ledger row of their own (not an event). */
export async function drawUnits(db: Db, at: { companyId: string; accountId: string; denomination: string; amount: Units } & LedgerFields, now: Date): Promise<LedgerRow[]> {
  const { companyId, accountId, denomination, amount, ...fields } = at;
  const [r] = await moveBalances(db, companyId, [{ accountId, denomination, ops: [{ op: { kind: 'draw', amount }, ledger: fields }] }], now);
  return r.rows;
}

/** Writes what the grants' own times did (expiries, grants taking effect) on a balance, now. */
export async function settleGrants(db: Db, companyId: string, balances: { accountId: string; denomination: string }[], now: Date): Promise<void> {
  await moveBalances(db, companyId, balances.map((b) => ({ ...b, ops: [] })), now);
}

/** A hold completed (its event already flipped in this transaction): its final cost is drawn, its held cost (`held`, default `cost`) leaves the holds. */
export async function completeHold(db: Db, hold: { companyId: string; accountId: string; denomination: string; cost: Units; held?: Units } & LedgerFields, now: Date): Promise<LedgerRow[]> {
  const { companyId, accountId, denomination, cost, held, ...fields } = hold;
  const [r] = await moveBalances(db, companyId, [{ accountId, denomination, ops: [{ op: { kind: 'complete_hold', cost, held }, ledger: fields }] }], now);
  return r.rows;
}

/**
 * Holds stopped counting against `available` (cancelled, or expired at `lapsedAt`): nothing
 * moved in the ledger, but `available` rose by their cost. Queues `balance_change` and re-arms
 * the crossing notifications like any other rise, inside the caller's transaction.
 */
export async function releaseHolds(
  db: Db,
  released: { companyId: string; accountId: string; denomination: string; amount: Units; lapsedAt?: Date }[],
  now: Date,
): Promise<void> {
  const byCompany = new Map<string, typeof released>();
  for (const h of released) byCompany.set(h.companyId, [...(byCompany.get(h.companyId) ?? []), h]);
  for (const [companyId, holds] of byCompany) {
    await moveBalances(db, companyId, holds.map((h) => ({ accountId: h.accountId, denomination: h.denomination, ops: [{ op: { kind: 'release', amount: h.amount } }], raisedAt: h.lapsedAt })), now);
  }
}

export async function listTransactions({ db, accountId, page, denomination }: { db: Db; accountId: string; page: PageQuery; denomination?: string }) {
  return keysetPage(
    db.select().from(transactions).$dynamic(),
    transactions.id,
    page,
    eq(transactions.accountId, accountId),
    denomination ? eq(transactions.denomination, denomination) : undefined,
  );
}

/** Sum of ledger rows per balance, for invariant checks. */
export async function ledgerSums(db: Db, accountId: string) {
  return db
    .select({ denomination: transactions.denomination, total: sql<string>`sum(${transactions.amount})::text` })
    .from(transactions)
    .where(eq(transactions.accountId, accountId))
    .groupBy(transactions.denomination)
    .orderBy(asc(transactions.denomination));
}

const pairKey = (accountId: string, denomination: string) => `${accountId}\u0000${denomination}`;

/** A ledger row as a statement returned it. */
function ledgerRowFromRaw(r: Record<string, unknown>): LedgerRow {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    companyId: r.company_id as string,
    balanceId: r.balance_id as string,
    denomination: r.denomination as string,
    type: r.type as LedgerRow['type'],
    description: r.description as string,
    amount: String(r.amount),
    startingBalance: String(r.starting_balance),
    endingBalance: String(r.ending_balance),
    eventId: (r.event_id as string | null) ?? null,
    chargeId: (r.charge_id as string | null) ?? null,
    grantId: (r.grant_id as string | null) ?? null,
    createdAt: new Date(r.created_at as string),
  };
}

/** What a paid grant's units cost: the charge's cents per unit (to 12 decimals); null for none. */
export function costBasisOf(cents: number, units: Units): Units | null {
  return cmp(units, '0') > 0 ? new Decimal(cents).div(units).toDecimalPlaces(12).toFixed() : null;
}

/** A grant's priority unless the caller names one (0 is drawn first). */
export const DEFAULT_PRIORITY = 50;
