import type { Db } from '../../db/client';
import type { events } from '../../db/schema';
import { add, sub, type Units } from '../../money';
import { listBalances, type Balance } from '../balances/balances';
import type { BatchItem, EventInput } from './input';

type EventRow = typeof events.$inferSelect;
export type Recorded = { event: EventRow; balance: Balance | null };
type RecordBatch = (args: { db: Db; companyId: string; items: BatchItem[]; now: Date }) => Promise<EventRow[]>;
type RecordAlone = (args: { db: Db; companyId: string; accountId: string; input: EventInput; now: Date }) => Promise<Recorded>;

type Waiter = { input: EventInput; now: Date; resolve: (r: Recorded) => void; reject: (err: unknown) => void };

/**
 * Per database handle, the accounts with events being written now, and the events that arrived
 * for them meanwhile (in arrival order). The key's presence means a write is under way.
 */
const flights = new WeakMap<Db, Map<string, Waiter[]>>();

/** How many events were written as part of a group (observable by tests and the metrics). */
export const groupCommits = { groups: 0, events: 0 };

/**
 * Group commit for one account's single events inside this process. The first event for an
 * account is written at once (the one-statement path); events for the same account that arrive
 * while it is being written wait, and are then written together: one transaction, one lock on
 * the balance, each event its own record and ledger row, gated ones decided in arrival order.
 * Each caller gets its own answer: its event, and the balance as that event left it. Across
 * processes the balance's row lock keeps every decision exact, as before.
 *
 * A hot account therefore costs one transaction per group instead of one per event: while one
 * write holds the balance's lock, the events behind it queue in memory, not on the lock.
 */
export async function recordInGroup(
  { db, companyId, accountId, input, now }: { db: Db; companyId: string; accountId: string; input: EventInput; now: Date },
  alone: RecordAlone,
  batch: RecordBatch,
): Promise<Recorded> {
  let byAccount = flights.get(db);
  if (!byAccount) flights.set(db, (byAccount = new Map()));
  const key = `${companyId}\u0000${accountId}`;
  const waiting = byAccount.get(key);
  if (waiting) return new Promise<Recorded>((resolve, reject) => waiting.push({ input, now, resolve, reject }));
  byAccount.set(key, []);
  try {
    return await alone({ db, companyId, accountId, input, now });
  } finally {
    void drain(db, byAccount, key, companyId, accountId, alone, batch);
  }
}

/** Writes what queued behind a finished write, group after group, until nothing waits. */
async function drain(db: Db, byAccount: Map<string, Waiter[]>, key: string, companyId: string, accountId: string, alone: RecordAlone, batch: RecordBatch) {
  for (;;) {
    const waiters = byAccount.get(key) ?? [];
    if (!waiters.length) {
      byAccount.delete(key);
      return;
    }
    byAccount.set(key, []);
    try {
      if (waiters.length === 1) {
        const [w] = waiters;
        w.resolve(await alone({ db, companyId, accountId, input: w.input, now: w.now }));
        continue;
      }
      const results = await writeGroup(db, companyId, accountId, waiters, batch);
      groupCommits.groups++;
      groupCommits.events += waiters.length;
      waiters.forEach((w, i) => w.resolve(results[i]));
    } catch (err) {
      for (const w of waiters) w.reject(err);
    }
  }
}

async function writeGroup(db: Db, companyId: string, accountId: string, waiters: Waiter[], batch: RecordBatch): Promise<Recorded[]> {
  const now = waiters[waiters.length - 1].now;
  // The balance after the group is read in the group's transaction, while the batch still holds
  // it locked: read after the commit, it could already include what another writer did since.
  const { events, finals } = await db.transaction(async (tx) => {
    const events = await batch({ db: tx, companyId, items: waiters.map((w) => ({ ...w.input, account_id: accountId })), now });
    // Every balance of the account in one read, whatever denominations the group moved (none: no read).
    const billed = events.some((e) => e.costDenomination !== null);
    const finals = new Map(billed ? (await listBalances({ db: tx, accountId, now })).map((b) => [b.denomination, b]) : []);
    return { events, finals };
  });
  // The balance as each event left it: the balance after the group, less what the later events of the group did.
  const laterAmount = new Map<string, Units>();
  const laterPending = new Map<string, Units>();
  const out: Recorded[] = new Array(events.length);
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    const d = e.costDenomination;
    const final = d ? finals.get(d) : null;
    if (!d || e.costAmount === null || !final) {
      out[i] = { event: e, balance: null };
      continue;
    }
    out[i] = { event: e, balance: { ...final, amount: add(final.amount, laterAmount.get(d) ?? '0'), pending: sub(final.pending, laterPending.get(d) ?? '0') } };
    if (e.state === 'complete') laterAmount.set(d, add(laterAmount.get(d) ?? '0', e.costAmount));
    if (e.state === 'pending') laterPending.set(d, add(laterPending.get(d) ?? '0', e.costAmount));
  }
  return out;
}
