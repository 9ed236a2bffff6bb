process.env.BILLING_TEST_CLOCK = '1';

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../testing/harness';
import { now } from '../clock';
import { enqueueJob } from './queue';
import { advanceTestClock, registerJobHandler, tick } from './worker';

const t = useTestDatabase();

describe('advancing the test clock while the background tick is at work', () => {
  it('waits for the tick, so the work it is doing is not run again once its lease is stepped past', async () => {
    const { db } = t.database;
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    registerJobHandler('advance_test', async () => {
      runs++;
      started();
      await gate;
    });
    await enqueueJob(db, { kind: 'advance_test', dedupeKey: 'advance-1', payload: {}, runAt: now() }, now());
    const background = tick();
    await running;
    // A day later in test time: far past the job's five-minute lease.
    const advanced = advanceTestClock(db, 86_400);
    await new Promise((r) => setTimeout(r, 300));
    release();
    await Promise.all([background, advanced]);
    expect(runs).toBe(1);
  });
});

describe('two advances at once', () => {
  it('take turns: the clock moves by both, each from where the other left it', async () => {
    const { db } = t.database;
    const start = (await advanceTestClock(db, 0)).getTime();
    const [first, second] = await Promise.all([advanceTestClock(db, 86_400), advanceTestClock(db, 3_600)]);
    expect(first.getTime() - start).toBe(86_400_000);
    expect(second.getTime() - start).toBe(86_400_000 + 3_600_000);
    expect(now().getTime() - start).toBe(90_000_000);
  });
});
