process.env.BILLING_TEST_CLOCK = '1';

import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../testing/harness';
import { now } from '../clock';
import { enqueueJob } from '../db/sql/jobs';
import { advanceTestClock, registerJobHandler, registerTask, stopWorker, tick } from './worker';

const t = useTestDatabase();
// The background tick starts the webhook sender, as in a server: stopped with the worker, as a server's stop does.
afterAll(() => stopWorker());

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

describe('upkeep on the test clock', () => {
  it('runs when its own next time comes, drains a backlog at once, and never makes the clock stop', async () => {
    const { db } = t.database;
    const start = (await advanceTestClock(db, 0)).getTime();
    const minutes = (at: Date | number) => (new Date(at).getTime() - start) / 60_000;
    const steps: number[] = [];
    const runs: number[] = [];
    let backlog = 0;
    // After its first run it foresees work 15 minutes on; after the others, nothing (an hour at most).
    let foreseen: Date | null = new Date(start + 15 * 60_000);
    registerJobHandler('upkeep_step', async () => {
      steps.push(minutes(now()));
      if (minutes(now()) === 150) backlog = 2;
    });
    registerTask({
      name: 'upkeep_test',
      run: async (_db, at) => {
        runs.push(minutes(at));
        return backlog > 0 ? (backlog--, 1) : 0;
      },
      upkeep: {
        every: 3600_000,
        next: async () => {
          const next = foreseen;
          foreseen = null;
          return next;
        },
      },
    });
    for (const m of [10, 20, 30, 150]) await enqueueJob(db, { kind: 'upkeep_step', dedupeKey: `upkeep-${m}`, payload: {}, runAt: new Date(start + m * 60_000) }, now());

    await advanceTestClock(db, 3 * 3600);
    // The clock stopped where jobs were due, not at 15 or 80 minutes (the upkeep's own times).
    expect(steps).toEqual([10, 20, 30, 150]);
    // First run at once; at 10 minutes not due yet; at 20 due (15 foreseen); then not before 80;
    // at 150 three runs (two items, then none); at 180 not due (210).
    expect(runs).toEqual([0, 20, 150, 150, 150]);
  });
});
