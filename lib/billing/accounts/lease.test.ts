import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { withAccountLease } from './lease';

const t = useTestDatabase();

describe("the account's plan lease", () => {
  it('a run whose lease ran out gives back only its own: the run that took it over keeps it', async () => {
    const co = await newCompany(t);
    const r = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Lee', email: 'lee@x.io' } });
    expect(r.status).toBe(200);
    const id = r.body.data.id as string;
    const db = t.database.db;
    const t0 = Date.now();
    const minutes = (m: number) => new Date(t0 + m * 60_000);
    const gate = () => {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      return { open, opened };
    };

    // A takes the lease and stalls past its ten minutes.
    const holdA = gate();
    const a = withAccountLease(db, id, minutes(0), () => holdA.opened);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // B, eleven minutes on, finds it run out and takes it.
    const holdB = gate();
    const startedB = gate();
    const b = withAccountLease(db, id, minutes(11), async () => {
      startedB.open();
      await holdB.opened;
    });
    await startedB.opened;
    // A ends: B's lease is not A's to give back.
    holdA.open();
    await a;
    await expect(withAccountLease(db, id, minutes(12), async () => 'ran')).rejects.toMatchObject({ type: 'conflict' });
    holdB.open();
    await b;
    expect(await withAccountLease(db, id, minutes(12), async () => 'ran')).toBe('ran');
  });
});
