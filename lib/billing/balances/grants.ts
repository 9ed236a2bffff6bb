import { and, eq, gt, isNotNull, isNull, lte, or } from 'drizzle-orm';
import { query, sql, type Db } from '../../db/client';
import { balances, creditGrants, type GrantCategory } from '../../db/schema';
import { invalid, notFound } from '../../errors';
import { unitsOut, type Units } from '../../money';
import { keysetPage, type PageQuery } from '../../db/keyset';
import { ensureBalances, findBalance, grantUnits, moveBalances, settleGrants, type Balance } from './balances';
import { checkDenomination } from './denomination';

export type GrantRow = typeof creditGrants.$inferSelect;

/** At most this many live grants on one balance (each draw reads them when it passes the head). */
export const MAX_LIVE_GRANTS = 1000;

/** Creates the balance (idempotent) and, with an amount, grants the company's units (promotional, never expiring) as one ledger row. */
export async function createOrGrantBalance({
  db,
  companyId,
  accountId,
  denomination,
  amount,
  reason,
  expiresAt = null,
  priority,
  now,
}: {
  db: Db;
  companyId: string;
  accountId: string;
  denomination: string;
  amount?: string;
  reason?: string;
  expiresAt?: Date | null;
  priority?: number;
  now: Date;
}): Promise<Balance> {
  checkDenomination(denomination);
  checkGrantTimes({ expiresAt }, now);
  await db.transaction(async (tx) => {
    await ensureBalances(tx, [{ accountId, companyId, denomination }], now);
    if (amount) {
      await lockGrantRoom(tx, accountId, denomination);
      await grantUnits(tx, { companyId, accountId, denomination, amount, category: 'promotional', source: 'grant', priority, expiresAt, type: 'grant', description: reason ?? 'Units granted' }, now);
    }
  });
  return (await findBalance({ db, accountId, denomination, now }))!;
}

/** What a company's grant says: its units, what they are, when they count and until when. */
export type GrantRequest = { amount: Units; category: GrantCategory; priority: number; effectiveAt?: Date; expiresAt?: Date; reason?: string };

/** Refuses what no grant may say: an expiry already past, or not after the grant takes effect. */
export function checkGrantTimes(at: { effectiveAt?: Date; expiresAt?: Date | null }, now: Date, param = 'expires_at'): void {
  if (!at.expiresAt) return;
  if (at.expiresAt.getTime() <= now.getTime()) throw invalid(`${param} must be in the future.`, param);
  if (at.effectiveAt && at.expiresAt.getTime() <= at.effectiveAt.getTime()) throw invalid(`${param} must be after effective_at.`, param);
}

/** A balance's live grants (not closed); none when the balance does not exist yet. */
async function liveGrantCount(db: Db, accountId: string, denomination: string): Promise<number> {
  const [r] = await query<{ n: number }>(
    db,
    sql`select count(*)::int as n from credit_grants g join balances b on b.id = g.balance_id
      where b.account_id = ${accountId} and b.denomination = ${denomination} and g.closed_at is null`,
  );
  return r.n;
}

const tooManyGrants = () => invalid(`A balance holds at most ${MAX_LIVE_GRANTS} live grants; let some expire or void them first.`, 'amount');

/** Refuses a grant the balance has no room for, before anything is charged for it. */
export async function checkGrantRoom(db: Db, accountId: string, denomination: string): Promise<void> {
  if ((await liveGrantCount(db, accountId, denomination)) >= MAX_LIVE_GRANTS) throw tooManyGrants();
}

/** The same under the balance's lock (it exists), so two grants at once cannot both take the last place. */
async function lockGrantRoom(db: Db, accountId: string, denomination: string): Promise<void> {
  await db.select({ id: balances.id }).from(balances).where(and(eq(balances.accountId, accountId), eq(balances.denomination, denomination))).for('update');
  await checkGrantRoom(db, accountId, denomination);
}

/** The company gives units as a grant (the balance is made when missing). Inside the caller's transaction. */
export async function createGrant(db: Db, at: { companyId: string; accountId: string; denomination: string; request: GrantRequest }, now: Date): Promise<GrantRow> {
  const { companyId, accountId, request: r } = at;
  const denomination = checkDenomination(at.denomination);
  checkGrantTimes(r, now);
  await ensureBalances(db, [{ accountId, companyId, denomination }], now);
  await lockGrantRoom(db, accountId, denomination);
  const { grantId } = await grantUnits(
    db,
    {
      companyId,
      accountId,
      denomination,
      amount: r.amount,
      category: r.category,
      source: 'grant',
      costBasis: null,
      priority: r.priority,
      effectiveAt: r.effectiveAt && r.effectiveAt.getTime() > now.getTime() ? r.effectiveAt : now,
      expiresAt: r.expiresAt ?? null,
      type: 'grant',
      description: r.reason ?? `${r.category === 'paid' ? 'Paid' : 'Promotional'} grant of ${r.amount} ${denomination}`,
    },
    now,
  );
  return (await grantById(db, companyId, grantId))!;
}

/** Voids what is left of a grant: one `void` ledger row. A grant already voided is answered as it is. */
export async function voidGrant(db: Db, at: { companyId: string; grantId: string }, now: Date): Promise<GrantRow> {
  const g = await grantById(db, at.companyId, at.grantId);
  if (!g) throw notFound('grant', 'grant_id');
  if (g.voidedAt) return g;
  await moveBalances(db, at.companyId, [{ accountId: g.accountId, denomination: g.denomination, ops: [{ op: { kind: 'close', grantId: g.id, how: 'void' }, ledger: { type: 'void', description: `Void of grant ${g.id} (${g.description})`, chargeId: g.chargeId } }] }], now);
  const after = (await grantById(db, at.companyId, at.grantId))!;
  // A grant already used up (closed by a draw) had nothing left: it is marked voided all the
  // same, with no ledger row, so a void answers the same whichever path drew its last unit. An
  // expired grant stays expired.
  if (!after.voidedAt && !(after.expiresAt && after.expiresAt.getTime() <= now.getTime())) {
    await db.update(creditGrants).set({ voidedAt: now }).where(eq(creditGrants.id, after.id));
    return (await grantById(db, at.companyId, at.grantId))!;
  }
  return after;
}

/** A grant of the company, with what it has left (a balance's head grant keeps that on the balance). */
export async function grantById(db: Db, companyId: string, grantId: string): Promise<GrantRow | null> {
  const rows = await db
    .select({ g: creditGrants, head: balances.headGrantId, headRemaining: balances.headRemaining })
    .from(creditGrants)
    .innerJoin(balances, eq(balances.id, creditGrants.balanceId))
    .where(and(eq(creditGrants.id, grantId), eq(creditGrants.companyId, companyId)));
  return rows[0] ? withHead(rows[0]) : null;
}

const withHead = (r: { g: GrantRow; head: string | null; headRemaining: string | null }): GrantRow =>
  r.head === r.g.id && r.headRemaining !== null && !r.g.closedAt ? { ...r.g, remaining: r.headRemaining } : r.g;

export type GrantStatusFilter = 'live' | 'expired' | 'voided' | 'all';

/**
 * A balance's grants, newest first. `live`: not voided, not expired, with units left or still to
 * take effect; `expired`: expired (written or not); `voided`.
 */
export async function listGrants(db: Db, at: { accountId: string; denomination: string; status: GrantStatusFilter; page: PageQuery }, now: Date) {
  const due = now;
  const status = {
    live: and(isNull(creditGrants.voidedAt), or(isNull(creditGrants.expiresAt), gt(creditGrants.expiresAt, due)), isNull(creditGrants.closedAt)),
    expired: and(isNull(creditGrants.voidedAt), isNotNull(creditGrants.expiresAt), lte(creditGrants.expiresAt, due)),
    voided: isNotNull(creditGrants.voidedAt),
    all: undefined,
  }[at.status];
  const page = await keysetPage(
    db.select({ g: creditGrants, head: balances.headGrantId, headRemaining: balances.headRemaining }).from(creditGrants).innerJoin(balances, eq(balances.id, creditGrants.balanceId)).$dynamic(),
    creditGrants.id,
    at.page,
    eq(creditGrants.accountId, at.accountId),
    eq(creditGrants.denomination, at.denomination),
    status,
  );
  return { items: page.items.map(withHead), hasMore: page.hasMore };
}

/** A grant's state at `now` (an expiry counts from `expires_at`, written or not), and what it has left then. */
export function grantState(g: GrantRow, now: Date): { status: 'voided' | 'expired' | 'scheduled' | 'used' | 'live'; remaining: Units } {
  const expired = !g.voidedAt && g.expiresAt !== null && g.expiresAt.getTime() <= now.getTime();
  const status = g.voidedAt ? ('voided' as const) : expired ? ('expired' as const) : !g.active ? ('scheduled' as const) : g.closedAt ? ('used' as const) : ('live' as const);
  return { status, remaining: expired ? '0' : g.remaining };
}

/** What a grant is as the API shows it. */
export function serializeGrant(g: GrantRow, now: Date) {
  const { status, remaining } = grantState(g, now);
  return {
    id: g.id,
    account_id: g.accountId,
    denomination: g.denomination,
    amount: unitsOut(g.amount),
    // An expired grant has nothing left, whether or not its expiry is written yet.
    remaining: unitsOut(remaining),
    category: g.category,
    source: g.source,
    priority: g.priority,
    status,
    effective_at: g.effectiveAt.toISOString(),
    expires_at: g.expiresAt?.toISOString() ?? null,
    cost_basis: g.costBasis === null ? null : unitsOut(g.costBasis),
    charge_id: g.chargeId,
    description: g.description,
    voided_at: g.voidedAt?.toISOString() ?? null,
    created_at: g.createdAt.toISOString(),
  };
}

/**
 * Writes what the grants' own times did on an account's balances that have a grant due (its
 * expiry, or its taking effect), so that what is read next is as of now. Its own transaction.
 */
export async function settleDueGrants(db: Db, at: { companyId: string; accountId: string }, now: Date): Promise<void> {
  const due = await db
    .select({ denomination: balances.denomination })
    .from(balances)
    .where(and(eq(balances.accountId, at.accountId), lte(balances.grantsDueAt, now)));
  if (!due.length) return;
  await db.transaction((tx) => settleGrants(tx, at.companyId, due.map((d) => ({ accountId: at.accountId, denomination: d.denomination })), now));
}

/** What one transaction of the worker's sweep writes at most: balances, and their open grants read into memory. */
const SWEEP_BALANCES = 1000;
const SWEEP_GRANTS = 20_000;

/**
 * The worker's sweep: balances with a grant due, `limit` per run, each company's in transactions
 * of up to SWEEP_BALANCES balances or SWEEP_GRANTS open grants (a balance with more is one alone). Each transaction is
 * a fixed number of statements whatever its size, so a sweep's time is the rows it writes, not
 * round trips (which, beside a busy server in the same process, each wait their turn). Returns
 * how many balances it settled.
 */
export async function settleAllDueGrants(db: Db, now: Date, { limit = 10_000, balancesPerTransaction = SWEEP_BALANCES, grantsPerTransaction = SWEEP_GRANTS } = {}): Promise<number> {
  const due = await query<{ company_id: string; account_id: string; denomination: string; open: number }>(
    db,
    sql`select b.company_id, b.account_id, b.denomination,
        (select count(*)::int from credit_grants g where g.balance_id = b.id and g.closed_at is null) as open
      from balances b where b.grants_due_at <= ${now.toISOString()}::timestamptz
      order by b.grants_due_at limit ${limit}`,
  );
  const byCompany = new Map<string, typeof due>();
  for (const d of due) {
    const list = byCompany.get(d.company_id);
    if (list) list.push(d);
    else byCompany.set(d.company_id, [d]);
  }
  for (const [companyId, list] of byCompany) {
    // Each transaction holds its balances' locks until it commits; a gate on one of them waits that long.
    for (let i = 0; i < list.length; ) {
      let end = i;
      let grants = 0;
      while (end < list.length && end - i < balancesPerTransaction && (end === i || grants + list[end].open <= grantsPerTransaction)) grants += list[end++].open;
      const chunk = list.slice(i, end).map((d) => ({ accountId: d.account_id, denomination: d.denomination }));
      await db.transaction((tx) => settleGrants(tx, companyId, chunk, now));
      i = end;
    }
  }
  return due.length;
}
