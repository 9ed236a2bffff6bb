import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { Random } from '../../../faults/random';
import { replaceWallClock } from '../../clock';
import { accounts, charges as chargeRows, transactions } from '../../db/schema';
import type { Db } from '../../db/client';
import { newId } from '../../ids';
import { replaceProcessors } from '../../processor/processors';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { ScriptedProcessor, SimulatedCrash, type Fault } from '../../testing/scripted-processor';
import { chargeFor, reconcileCharges } from '../settlement';
import { NO_RETRY } from '../../testing/retry';

/**
 * A deterministic simulation of the charge lifecycle: the real domain code (requests that charge,
 * the reconciler as two workers) on a real database, against a scripted processor that holds
 * requests, loses answers, refuses the company's key, answers 5xx, lets keys expire and settles
 * payments late; the service's clock and real time jump apart; a process dies before or after a
 * processor call (a thrown error), and what it left is resumed from the database. Every
 * processor call waits at a gate the seed opens, one actor runs at a time, so a seed replays
 * exactly. After each seed:
 * - every succeeded payment is credited exactly once;
 * - nothing is credited without a succeeded payment;
 * - no charge is failed while paid;
 * - no two payments for one request;
 * - once the faults stop and time passes, no charge is left pending.
 *
 * The model's bounds on real time, which the service relies on: a request reaches the processor
 * within the client's timeout of being sent, and the processor carries out a request it holds
 * within an hour (SEND_SETTLED_MS). A process frozen for a day between deciding to send and
 * sending is outside it.
 *
 * SIM_SEEDS=n runs n seeds (1,000 on PostgreSQL, 250 on the embedded database), from SIM_START
 * (random, printed); SIM_SEED=s replays one seed, printing its steps.
 */

const t = useTestDatabase();

const postgres = process.env.TEST_DB === 'postgres';
const pooled = process.env.DATABASE_PREPARE === '0';
// The run's 1,000 seeds on PostgreSQL, where a seed takes about half the time it takes on PGlite
// (15–21 ms against 28–37 ms in CI), and 250 more on the embedded database; nothing of a charge's
// SQL depends on the session (vitest.config.ts runs it on the two databases only, not pooled).
const SEEDS = Number(process.env.SIM_SEEDS ?? (pooled ? 50 : postgres ? 1000 : 250));
const ONLY = process.env.SIM_SEED ? Number(process.env.SIM_SEED) : null;
const START = ONLY ?? Number(process.env.SIM_START ?? Math.floor(Math.random() * 2 ** 31));

const HOUR = 3600_000;
/** Every seed starts at the same times, so it replays alone as it ran among the others. */
const SERVICE_T0 = Date.UTC(2031, 0, 1);
const WALL_T0 = Date.UTC(2031, 0, 1, 0, 0, 7);

let wall = WALL_T0;
const restoreWall = replaceWallClock(() => wall);
let processor: ScriptedProcessor;
const restoreProcessors = replaceProcessors(() => processor);
afterAll(() => {
  restoreWall();
  restoreProcessors();
});

type Request = { key: string; amount: number; units: string; firstAt: number | null; running: boolean };

/** One seed's run; the invariants it broke (empty when none), and its steps. */
async function runSeed(db: Db, company: Awaited<ReturnType<typeof newCompany>>['company'], seed: number): Promise<{ broken: string[]; steps: string[] }> {
  const rnd = new Random(seed);
  const steps: string[] = [];
  const broken: string[] = [];
  let service = SERVICE_T0;
  wall = WALL_T0;

  // One actor runs at a time: the others wait at a processor gate, or have not started.
  let running = 0;
  let onQuiet: (() => void) | null = null;
  const settle = () => {
    if (running === 0 && onQuiet) {
      const go = onQuiet;
      onQuiet = null;
      go();
    }
  };
  const quiet = () => (running === 0 ? Promise.resolve() : new Promise<void>((r) => (onQuiet = r)));
  const declining = rnd.chance(0.15);
  processor = new ScriptedProcessor(
    () => wall,
    () => declining,
    (delta) => {
      running -= delta;
      settle();
    },
  );
  const start = (name: string, work: () => Promise<unknown>) => {
    running++;
    work()
      .catch((err: unknown) => {
        if (!(err instanceof SimulatedCrash)) broken.push(`${name} threw ${err instanceof Error ? err.stack : String(err)}`);
        else steps.push(`${name} died: ${err.message}`);
      })
      .finally(() => {
        running--;
        settle();
      });
    return quiet();
  };

  const accountId = newId('a');
  await db.insert(accounts).values({
    id: accountId,
    companyId: company.id,
    name: `sim ${seed}`,
    email: 'sim@example.com',
    metadata: {},
    flags: [],
    processorId: `cus_${accountId}`,
    paymentMethod: { id: 'pm_sim', brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2040 },
    createdAt: new Date(service),
    updatedAt: new Date(service),
  });
  const [account] = await db.select().from(accounts).where(eq(accounts.id, accountId));
  const requests: Request[] = Array.from({ length: rnd.int(1, 2) }, (_, i) => ({ key: `sim-${seed}-${i}`, amount: rnd.pick([50, 264, 1000]), units: String(rnd.int(1, 500)), firstAt: null, running: false }));
  const workers = { A: false, B: false };

  const sendRequest = (r: Request) => {
    r.running = true;
    r.firstAt ??= service;
    const description = `Deposit ${r.key}`;
    return start(`request ${r.key}`, async () => {
      try {
        await chargeFor({
          db,
          company,
          account,
          amount: r.amount,
          reason: 'deposit',
          description,
          effects: [{ kind: 'grant', denomination: 'credits', amount: r.units, type: 'deposit', description }],
          now: new Date(service),
          idempotencyKey: r.key,
        });
      } finally {
        r.running = false;
      }
    });
  };
  const runWorker = (w: 'A' | 'B') => {
    workers[w] = true;
    return start(`worker ${w}`, async () => {
      try {
        await reconcileCharges(db, new Date(service));
      } finally {
        workers[w] = false;
      }
    });
  };
  const FAULTS: Fault[] = ['ok', 'ok', 'ok', 'hold', 'lose', 'error_before', 'error_after', 'processing', 'crash_before', 'crash_after'];

  const events = rnd.int(6, 18);
  for (let i = 0; i < events; i++) {
    const what = rnd.pick(['request', 'request', 'worker', 'worker', 'release', 'release', 'release', 'service', 'wall', 'key', 'held', 'settle'] as const);
    if (what === 'request') {
      // A client retries with the same key while the key lives (24 hours of the service's time).
      const r = rnd.pick(requests);
      if (r.running || (r.firstAt !== null && service - r.firstAt >= 23 * HOUR)) continue;
      steps.push(`send ${r.key}`);
      await sendRequest(r);
    } else if (what === 'worker') {
      const w = rnd.pick(['A', 'B'] as const);
      if (workers[w]) continue;
      steps.push(`worker ${w} runs`);
      await runWorker(w);
    } else if (what === 'release') {
      if (!processor.waiting.length) continue;
      const call = processor.waiting.splice(rnd.int(0, processor.waiting.length - 1), 1)[0];
      const fault = rnd.pick(FAULTS);
      steps.push(`${call.kind} answered: ${fault}`);
      running++; // the released call runs on at once
      call.release(fault);
      running--;
      await quiet();
    } else if (what === 'service') {
      const ms = rnd.pick([60_000, 10 * 60_000, HOUR, 6 * HOUR, 25 * HOUR]);
      service += ms;
      steps.push(`service clock +${ms / 60_000} min`);
    } else if (what === 'wall') {
      const ms = rnd.pick([1000, 30_000, 10 * 60_000, 2 * HOUR, 25 * HOUR]);
      // The model's bounds on real time: a request reaches the processor within the client's
      // timeout of being sent (calls waiting at their gate arrive first), and the processor
      // carries out what it holds within the hour (SEND_SETTLED_MS).
      if (ms > 20_000) {
        while (processor.waiting.length) {
          const fault = rnd.pick(FAULTS);
          steps.push(`${processor.waiting[0].kind} answered: ${fault}`);
          running++;
          processor.waiting.shift()!.release(fault);
          running--;
          await quiet();
        }
      }
      if (ms >= HOUR) while (processor.runHeld()) steps.push('a held request is carried out');
      wall += ms;
      steps.push(`real time +${ms / 1000} s`);
    } else if (what === 'key') {
      processor.keyRefusedUntil = wall + rnd.pick([10 * 60_000, 2 * HOUR]);
      steps.push('the company key is refused for a while');
    } else if (what === 'held') {
      if (processor.runHeld()) steps.push('a held request is carried out');
    } else if (what === 'settle') {
      if (processor.settleOne()) steps.push('a processing payment settles');
    }
  }

  // The faults stop; time passes until nothing is pending.
  processor.keyRefusedUntil = -Infinity;
  for (let round = 0; round < 60; round++) {
    while (processor.waiting.length) {
      running++;
      processor.waiting.shift()!.release('ok');
      running--;
      await quiet();
    }
    while (processor.runHeld());
    while (processor.settleOne());
    const [{ n }] = await db.select({ n: sql<number>`count(*)::int` }).from(chargeRows).where(sql`${chargeRows.accountId} = ${accountId} and ${chargeRows.status} = 'pending'`);
    if (n === 0) break;
    service += 2 * HOUR;
    wall += 2 * HOUR;
    await runWorker('A');
  }

  const rows = await db.select().from(chargeRows).where(eq(chargeRows.accountId, accountId));
  const credited = new Map<string, number>();
  for (const row of await db.select({ chargeId: transactions.chargeId }).from(transactions).where(eq(transactions.accountId, accountId))) {
    if (row.chargeId) credited.set(row.chargeId, (credited.get(row.chargeId) ?? 0) + 1);
  }
  const byId = new Map(rows.map((c) => [c.id, c]));
  const paidPerRequest = new Map<string, number>();
  for (const intent of processor.intents.values()) {
    if (intent.status !== 'succeeded') continue;
    const charge = byId.get(intent.chargeId);
    if (!charge) {
      broken.push(`payment ${intent.id} has no charge`);
      continue;
    }
    const request = (charge.workKey ?? '').replace(/#.*$/, '');
    paidPerRequest.set(request, (paidPerRequest.get(request) ?? 0) + 1);
    if (charge.status === 'failed') broken.push(`charge ${charge.id} is failed, and its payment ${intent.id} succeeded`);
    else if (charge.processorPaymentIntentId !== intent.id) broken.push(`payment ${intent.id} succeeded and is not the one charge ${charge.id} was credited for (${charge.processorPaymentIntentId})`);
    else if (credited.get(charge.id) !== 1) broken.push(`payment ${intent.id} credited ${credited.get(charge.id) ?? 0} times`);
  }
  for (const [request, n] of paidPerRequest) if (n > 1) broken.push(`${n} payments for request ${request}`);
  for (const c of rows) {
    const intent = c.processorPaymentIntentId ? processor.intents.get(c.processorPaymentIntentId) : undefined;
    if (c.status === 'succeeded' && intent?.status !== 'succeeded') broken.push(`charge ${c.id} credited without a succeeded payment`);
    if (c.status !== 'succeeded' && credited.has(c.id)) broken.push(`charge ${c.id} (${c.status}) has credit`);
    if (c.status === 'pending') broken.push(`charge ${c.id} still pending once the faults stopped`);
  }
  tally.paid += rows.filter((c) => c.status === 'succeeded').length;
  tally.failed += rows.filter((c) => c.status === 'failed').length;
  tally.died += steps.filter((s) => s.includes(' died')).length;
  tally.late += steps.filter((s) => s === 'a held request is carried out').length;
  return { broken, steps };
}

/** What the seeds did, added up: a run that never pays, fails or dies tests nothing. */
const tally = { paid: 0, failed: 0, died: 0, late: 0 };

describe('the charge lifecycle under processor faults, crashes and clock jumps', NO_RETRY, () => {
  let company: Awaited<ReturnType<typeof newCompany>>['company'];
  beforeAll(async () => {
    ({ company } = await newCompany(t, { processor_key: 'sk_test_simulation' }));
  });

  it(`holds its invariants for every seed (${ONLY !== null ? `seed ${ONLY}` : `${SEEDS} seeds from ${START}`})`, async () => {
    const began = Date.now();
    // A run of few seeds may by chance reach none of one kind (a held request carried out late
    // comes about once in 40 seeds): then more seeds run, up to eight times as many, until each
    // kind was reached.
    const covered = () => Math.min(tally.paid, tally.failed, tally.died, tally.late) > 0;
    const planned = ONLY !== null ? 1 : SEEDS;
    let count = 0;
    for (let i = 0; i < planned || (ONLY === null && !covered() && i < SEEDS * 8); i++, count++) {
      const seed = (START + i) >>> 0;
      const { broken, steps } = await runSeed(t.database.db, company, seed);
      if (ONLY !== null) console.log(steps.join('\n'));
      if (broken.length) {
        expect.fail(`seed ${seed} broke the charge invariants (replay: SIM_SEED=${seed} npx vitest run --project ${process.env.TEST_DB ?? 'embedded'} lib/billing/charges/simulation.test.ts):\n${broken.join('\n')}\nsteps:\n${steps.join('\n')}`);
      }
    }
    console.log(`charge simulation: ${count} seeds from ${START} in ${((Date.now() - began) / 1000).toFixed(1)} s on ${t.kind}: ${tally.paid} charges paid, ${tally.failed} failed, ${tally.died} processes died, ${tally.late} requests carried out late`);
    if (ONLY === null) expect(Math.min(tally.paid, tally.failed, tally.died, tally.late)).toBeGreaterThan(0);
  }, Math.max(120_000, SEEDS * 8 * 250));
});
