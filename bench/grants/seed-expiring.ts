/**
 * Seeds grants that all expire at one instant, for the expiry benchmark (bench/ingest/run.mjs
 * `--only expiry`): GRANTS grants (100,000), PER_BALANCE (10) on each balance, over the
 * company's accounts and as many denominations as that takes (`credits`, the balance the
 * benchmark's gated events draw from, first; then `promo1`, `promo2`, ...). Each grant is made
 * by the service's own balance writer (moveBalances: the grant, its ledger row, the balance's
 * head and next due time), 100 balances per transaction.
 *
 *   DATABASE_URL=... COMPANY_ID=co_... NOW=<ISO> EXPIRES_AT=<ISO> npx tsx bench/grants/seed-expiring.ts
 *
 * With EXPIRE=1 it seeds nothing: it moves the test clock past EXPIRES_AT, then waits until no grant
 * is due and prints how long that took.
 *
 * The grants come before the plan allowance in the draw order (priority 10 to 19), so the
 * events drawn meanwhile draw from grants that are about to expire.
 */
import { openPostgres, query, sql } from '../../lib/db/client';
import { moveBalances, type BalanceMove } from '../../lib/billing/balances/balances';
import { newId } from '../../lib/ids';

const url = process.env.DATABASE_URL;
const companyId = process.env.COMPANY_ID;
if (!url || !companyId || !process.env.NOW || !process.env.EXPIRES_AT) throw new Error('Set DATABASE_URL, COMPANY_ID, NOW and EXPIRES_AT.');
const now = new Date(process.env.NOW);
const expiresAt = new Date(process.env.EXPIRES_AT);
const GRANTS = Number(process.env.GRANTS ?? 100_000);
const PER_BALANCE = Number(process.env.PER_BALANCE ?? 10);
const PER_TRANSACTION = 100;

const database = await openPostgres(url, { max: 2 });
const db = database.db;
/** What is still due at EXPIRES_AT: balances that still have a grant due (the worker's own query), and with `all`, grants not written and the `expire` rows. */
async function left(all = false) {
  const at = expiresAt.toISOString();
  const [r] = await query<{ grants: number | null; balances: number; rows: number | null }>(
    db,
    all
      ? sql`select (select count(*)::int from credit_grants where company_id = ${companyId} and expires_at <= ${at}::timestamptz and closed_at is null) as grants,
          (select count(*)::int from balances where grants_due_at <= ${at}::timestamptz) as balances,
          (select count(*)::int from transactions where company_id = ${companyId} and type = 'expire') as rows`
      : sql`select null as grants, (select count(*)::int from balances where grants_due_at <= ${at}::timestamptz) as balances, null as rows`,
  );
  return r;
}
if (process.env.EXPIRE === '1') {
  // The test clock moves a second past the instant, as POST /v1/test_clock/advance stores it
  // (lib/jobs/worker.ts); the service's worker reads it at its next tick and writes the expiries.
  // Then what is due is counted every 250 ms until nothing is.
  const to = expiresAt.getTime() + 1000;
  const t0 = Date.now();
  await query(
    db,
    sql`insert into settings (key, value) values ('test_clock', ${JSON.stringify({ now: to })}::jsonb)
      on conflict (key) do update set value = excluded.value where (settings.value->>'now')::bigint < (excluded.value->>'now')::bigint`,
  );
  let r = await left();
  const trace: number[] = [];
  while (r.balances > 0) {
    if (Date.now() - t0 > 900_000) throw new Error(`still due after 900 s: ${JSON.stringify(r)}`);
    await new Promise((done) => setTimeout(done, 250));
    r = await left();
    if (trace.length < (Date.now() - t0) / 5000) trace.push(r.balances);
  }
  const seconds = +((Date.now() - t0) / 1000).toFixed(1);
  r = await left(true);
  console.log(JSON.stringify({ expiry_s: seconds, left_due_grants: r.grants, left_due_balances: r.balances, expire_rows: r.rows, due_balances_every_5s: trace }));
  await database.close();
  process.exit(0);
}
const accounts = (await query<{ id: string }>(db, sql`select id from accounts where company_id = ${companyId} order by id`)).map((a) => a.id);
const balanceCount = Math.ceil(GRANTS / PER_BALANCE);
const denominations = Array.from({ length: Math.ceil(balanceCount / accounts.length) }, (_, i) => (i === 0 ? 'credits' : `promo${i}`));
const moves: BalanceMove[] = [];
let toSeed = GRANTS;
for (const denomination of denominations) {
  for (const accountId of accounts) {
    if (toSeed <= 0) break;
    const n = Math.min(PER_BALANCE, toSeed);
    toSeed -= n;
    moves.push({
      accountId,
      denomination,
      ops: Array.from({ length: n }, (_, i) => ({
        op: { kind: 'grant' as const, grant: { id: newId('cg'), amount: '1000', priority: 10 + (i % 10), effectiveAt: now, expiresAt } },
        ledger: { type: 'grant' as const, description: 'Bench grant that expires' },
        grant: { category: 'promotional' as const, source: 'grant' as const, costBasis: null },
      })),
    });
  }
}
const t0 = Date.now();
// Two writers on disjoint balances (the database has two connections).
let next = 0;
await Promise.all(
  [0, 1].map(async () => {
    while (next < moves.length) {
      const slice = moves.slice(next, next + PER_TRANSACTION);
      next += PER_TRANSACTION;
      await db.transaction((tx) => moveBalances(tx, companyId, slice, now));
    }
  }),
);
const [due] = await query<{ grants: number; balances: number }>(
  db,
  sql`select count(*)::int as grants, count(distinct balance_id)::int as balances from credit_grants where company_id = ${companyId} and expires_at = ${expiresAt.toISOString()}::timestamptz and closed_at is null`,
);
console.log(JSON.stringify({ seeded_grants: due.grants, seeded_balances: due.balances, denominations: denominations.length, seed_s: +((Date.now() - t0) / 1000).toFixed(1) }));
await database.close();
