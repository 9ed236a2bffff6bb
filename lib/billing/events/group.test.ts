import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { balance, createAccount, grant } from '../../testing/scenario';
import { ledgerSums } from '../balances/balances';
import type { Db } from '../../db/client';
import { groupCommits, recordInGroup, type Recorded } from './group';
import { recordEvents } from './events';

const t = useTestDatabase();

describe('group commit of one account’s concurrent single events', () => {
  it('writes concurrent gated events together, each with its own record, ledger row and answer, decided in arrival order', async () => {
    const co = await newCompany(t);
    const acct = await createAccount(co, { name: 'Hot', email: 'hot@x.io' });
    await grant(co, acct, 10);
    const before = { ...groupCommits };

    const answers = await Promise.all(
      Array.from({ length: 64 }, () => co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'call', cost_override_amount: '1', cost_override_denomination: 'credits', gate_on_balance: true } })),
    );
    // Some of them were written as groups, not one transaction each.
    expect(groupCommits.groups).toBeGreaterThan(before.groups);
    expect(groupCommits.events - before.events).toBeGreaterThan(1);

    // Exactly ten fit; the others are refused with their own rejected event.
    const accepted = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 402);
    expect(accepted).toHaveLength(10);
    expect(refused).toHaveLength(54);
    const ids = [...accepted.map((a) => a.body.data.id as string), ...refused.map((a) => a.body.error.rejected_event_id as string)];
    expect(new Set(ids).size).toBe(64);

    // Arrival order: events are numbered (time-ordered ids) as they arrive, and the first ten to arrive are the ones that fit.
    const sorted = [...ids].sort();
    expect(new Set(sorted.slice(0, 10))).toEqual(new Set(accepted.map((a) => a.body.data.id)));

    // Each accepted answer shows the balance as its own event left it: 9, 8, ..., 0 in arrival order.
    const byId = [...accepted].sort((a, b) => (a.body.data.id < b.body.data.id ? -1 : 1));
    expect(byId.map((a) => a.body.data.balance.amount)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(byId.every((a) => a.body.data.balance.available === a.body.data.balance.amount)).toBe(true);

    // One ledger row per accepted event, and the ledger adds up to the balance.
    const ledger = (await co.call('GET', `/v1/accounts/${acct}/transactions?limit=100`)).body.data as { type: string; event_id: string | null; ending_balance: number }[];
    const eventRows = ledger.filter((r) => r.type === 'event');
    expect(eventRows.map((r) => r.event_id).sort()).toEqual(sorted.slice(0, 10));
    expect(eventRows.map((r) => r.ending_balance).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const credits = await balance(co, acct);
    expect(credits.amount).toBe(0);
    const [sum] = await ledgerSums(t.database.db, acct);
    expect(Number(sum.total)).toBe(0);

    // The refused ones are recorded as rejected events and charged nothing.
    const rejected = (await co.call('GET', `/v1/companies/{company}/events?account_id=${acct}&state=rejected&limit=100`)).body.data;
    expect(rejected).toHaveLength(54);
  });

  it('keeps holds and plain events exact when they are grouped with gated ones', async () => {
    const co = await newCompany(t);
    const acct = await createAccount(co, { name: 'Mixed', email: 'mixed@x.io' });
    await grant(co, acct, 20);
    const kinds = Array.from({ length: 48 }, (_, i) => (['hold', 'gated', 'plain'] as const)[i % 3]);
    const answers = await Promise.all(
      kinds.map((k) =>
        co.call('POST', `/v1/accounts/${acct}/events`, {
          body: { type: 'call', cost_override_amount: '1', cost_override_denomination: 'credits', ...(k === 'hold' && { state: 'pending' }), ...(k === 'gated' && { gate_on_balance: true }) },
        }),
      ),
    );
    const ok = (k: string) => answers.filter((a, i) => kinds[i] === k && a.status === 200).length;
    // Holds and plain events are never refused; gated ones only when nothing is available.
    expect(ok('hold')).toBe(16);
    expect(ok('plain')).toBe(16);
    expect(answers.filter((a) => a.status !== 200).every((a) => a.status === 402)).toBe(true);
    const gatedAccepted = ok('gated');
    const credits = await balance(co, acct);
    expect(credits.amount).toBe(20 - 16 - gatedAccepted);
    expect(credits.pending).toBe(16);
    // Replayed in arrival order (event ids), every gate decision is what a one-at-a-time ledger would have decided.
    const arrivals = answers
      .map((a, i) => ({ kind: kinds[i], id: (a.status === 200 ? a.body.data.id : a.body.error.rejected_event_id) as string, accepted: a.status === 200 }))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    let available = 20;
    for (const e of arrivals) {
      const fits = e.kind !== 'gated' || available >= 1;
      expect(e.accepted, `${e.kind} ${e.id} with ${available} available`).toBe(fits);
      if (fits) available -= 1;
    }
    expect(credits.available).toBe(available);
    const [sum] = await ledgerSums(t.database.db, acct);
    expect(Number(sum.total)).toBe(credits.amount);
  });

  it('answers each grouped event with the balance as the group left it, not as a writer after it did', async () => {
    const co = await newCompany(t);
    const acct = await createAccount(co, { name: 'Busy', email: 'busy@x.io' });
    await grant(co, acct, 10);
    const db = t.database.db;
    // The first event's write is held open, so the next five queue behind it and are written as one group.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const alone = async () => {
      await held;
      return { event: { id: 'ev_first', costDenomination: null, costAmount: null } as unknown as Recorded['event'], balance: null };
    };
    // As soon as the group's events are written, another writer deposits 100 credits on the same balance.
    let deposit: Promise<unknown> | undefined;
    const batch = async (args: Parameters<typeof recordEvents>[0]) => {
      const rows = await recordEvents(args);
      deposit = co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 100 } });
      await new Promise((r) => setTimeout(r, 150));
      return rows;
    };
    const input = { type: 'call', cost_override: { amount: '1', denomination: 'credits' } };
    const call = () => recordInGroup({ db, companyId: co.company.id, accountId: acct, input, now: new Date() }, alone as never, batch);
    const first = call();
    const group = Array.from({ length: 5 }, call);
    release();
    const answers = await Promise.all([first, ...group]);
    expect((await deposit) as { status: number }).toMatchObject({ status: 200 });
    // Each grouped event's answer: 9, 8, 7, 6, 5, whatever the deposit did after the group.
    expect(answers.slice(1).map((a) => Number(a.balance!.amount))).toEqual([9, 8, 7, 6, 5]);
    expect(answers.slice(1).every((a) => a.event.state === 'complete')).toBe(true);
    const credits = await balance(co, acct);
    expect(credits.amount).toBe(105);
  });

  it('hands a group to the batch in arrival order and each caller the record of its own event', async () => {
    // The first event's write is held open, so the next five queue behind it in the order they were called.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const event = (type: string) => ({ id: `ev_${type}`, type, costDenomination: null, costAmount: null }) as unknown as Recorded['event'];
    const batches: string[][] = [];
    const alone = async ({ input }: { input: { type: string } }) => {
      await held;
      return { event: event(input.type), balance: null };
    };
    const batch = async ({ items }: { items: { type: string }[] }) => {
      batches.push(items.map((i) => i.type));
      // Answered out of order would be wrong: the records come back in the items' order.
      return items.map((i) => event(i.type));
    };
    // A stand-in handle: the group's transaction is the handle itself.
    const db = { transaction: (fn: (tx: Db) => Promise<unknown>) => fn(db) } as unknown as Db;
    const call = (type: string) => recordInGroup({ db, companyId: 'c_1', accountId: 'a_1', input: { type }, now: new Date() }, alone as never, batch as never);
    const first = call('e0');
    const rest = ['e1', 'e2', 'e3', 'e4', 'e5'].map(call);
    release();
    const answers = await Promise.all([first, ...rest]);
    expect(batches).toEqual([['e1', 'e2', 'e3', 'e4', 'e5']]);
    expect(answers.map((a) => a.event.type)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5']);
    // Another account is never held up by this one's group.
    expect(await recordInGroup({ db, companyId: 'c_1', accountId: 'a_2', input: { type: 'x' }, now: new Date() }, (async () => ({ event: event('x'), balance: null })) as never, batch as never)).toMatchObject({ event: { type: 'x' } });
  });
});
