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
