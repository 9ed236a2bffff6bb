/**
 * The service under faults: real processes (the built server through scripts/serve.mjs, the
 * worker bundle), a durable PostgreSQL, the local Stripe server and a webhook receiver, with
 * clients that retry every request with its idempotency keys until it is acknowledged. Each
 * scenario breaks something at random while events, batches, holds, grants, deposits, threshold
 * refills and daily renewals run, lets the system settle, and checks the invariants
 * (faults/checks.ts). FAULTS_SEED replays a run's workload and fault plan.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, kills, requireBuild, sleep, totalKills } from './processes';
import { Random, runSeed } from './random';
import { runScenario, type FaultContext, type Report, type Scenario } from './scenario';
import { checkInvariants } from './checks';

const seed = runSeed();
const rng = new Random(seed);
const cluster = new Cluster(Number(process.env.FAULTS_PG_PORT ?? 24350));
/** Faults per run, across the scenarios. */
const MIN_KILLS = 20;
const reports: Report[] = [];
const scenarios: Scenario[] = [];

/**
 * Stops the scenario before (its processes were kept for the last test) so that the next one
 * has the machine and the ports to itself.
 */
async function closeEarlier(): Promise<void> {
  for (const earlier of scenarios.splice(0)) await earlier.close();
}

function expectClean(report: Report): void {
  reports.push(report);
  expect(report.failures, `${report.name} (FAULTS_SEED=${seed}):\n${report.failures.join('\n')}`).toEqual([]);
  // The faults met every kind of work: a scenario that did none of something proves nothing about it.
  const c = report.counts;
  const did = { events_complete: c.events_complete, batches: c.batches, holds: c.holds, transitions: c.transitions, grants: c.grants, deposits: c.deposits, refills_paid: c.refills_paid, renewals_paid: c.renewals_paid, crossing_deliveries: c.crossing_deliveries };
  expect(Object.entries(did).filter(([, n]) => !(n > 0)).map(([k]) => k), `${report.name}: work that never ran`).toEqual([]);
}

beforeAll(() => {
  requireBuild();
  console.log(`[faults] seed ${seed} (replay with FAULTS_SEED=${seed})`);
  cluster.start();
});

afterAll(async () => {
  for (const s of scenarios) await s.close();
  cluster.stop();
  const byKind = Object.entries(kills)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  console.log(`[faults] seed ${seed}: ${totalKills()} kills (${byKind}) in ${reports.map((r) => `${r.name} ${r.seconds}s`).join(', ')}`);
});

describe.sequential('the service under faults (PostgreSQL, several processes, local Stripe)', () => {
  it('(a) kill -9 of the app process group, again and again', async () => {
    await closeEarlier();
    const s = await runScenario({
      name: 'kill_app_group',
      cluster,
      rng: rng.fork('a'),
      topology: { apps: 1, webConcurrency: 2, workers: 0 },
      faults: async (ctx) => {
        const [app] = ctx.apps;
        for (let i = 0; i < 5; i++) {
          await sleep(ctx.rng.int(1_500, 3_500));
          await ctx.killApp(app, 'app_group');
          await sleep(ctx.rng.int(0, 500));
          await app.start();
        }
      },
    });
    scenarios.push(s);
    expectClean(s.report);
    expect(s.report.kills.app_group).toBeGreaterThanOrEqual(5);
  });

  it('(b) an immediate stop of PostgreSQL, then crash recovery', async () => {
    await closeEarlier();
    const s = await runScenario({
      name: 'crash_postgres',
      cluster,
      rng: rng.fork('b'),
      topology: { apps: 1, workers: 1 },
      faults: async (ctx) => {
        for (let i = 0; i < 4; i++) {
          await sleep(ctx.rng.int(2_000, 4_000));
          await ctx.crashPostgres();
          await sleep(ctx.rng.int(300, 2_000));
          await ctx.cluster!.restart();
          ctx.log('PostgreSQL recovered');
          const t0 = Date.now();
          await ctx.ready();
          ctx.log(`app ready again after ${Date.now() - t0} ms`);
        }
      },
    });
    scenarios.push(s);
    expectClean(s.report);
    expect(s.report.kills.postgres).toBeGreaterThanOrEqual(4);
  });

  it('(c) two app processes and two workers, one of each killed at random', async () => {
    await closeEarlier();
    const s = await runScenario({
      name: 'kill_some',
      cluster,
      rng: rng.fork('c'),
      topology: { apps: 2, workers: 2 },
      faults: async (ctx) => {
        for (let i = 0; i < 5; i++) {
          await sleep(ctx.rng.int(1_500, 3_000));
          const app = ctx.rng.pick(ctx.apps);
          const worker = ctx.rng.pick(ctx.workers);
          const apart = ctx.rng.int(0, 800);
          await Promise.all([
            ctx.killApp(app, 'app').then(() => app.start()),
            sleep(apart).then(async () => {
              await ctx.killWorker(worker);
              await worker.start();
            }),
          ]);
        }
      },
    });
    scenarios.push(s);
    expectClean(s.report);
    expect(s.report.kills.app + s.report.kills.worker).toBeGreaterThanOrEqual(10);
  });

  it('(d) the processor answers 500s, times out after charging, answers late and goes away', async () => {
    await closeEarlier();
    const s = await runScenario({
      name: 'processor_faults',
      cluster,
      rng: rng.fork('d'),
      topology: { apps: 1, workers: 1 },
      faults: async (ctx) => {
        const charges = { path_prefix: '/v1/payment_intents', method: 'POST' };
        const plan: ((ctx: FaultContext) => Promise<void>)[] = [
          async () => {
            ctx.log('processor: 500s before processing');
            await ctx.stripeRule({ ...charges, status: 500, count: ctx.rng.int(3, 8) });
          },
          async () => {
            ctx.log('processor: 500s after charging');
            await ctx.stripeRule({ ...charges, status: 500, after: true, count: ctx.rng.int(2, 5) });
          },
          async () => {
            ctx.log('processor: timeouts after charging');
            await ctx.stripeRule({ ...charges, delay_ms: 2_500, after: true, count: ctx.rng.int(2, 5) });
          },
          async () => {
            ctx.log('processor: charges made after the caller gave up');
            await ctx.stripeRule({ ...charges, delay_ms: 2_000, late: true, count: ctx.rng.int(1, 3) });
          },
          async () => {
            ctx.log('processor: gone');
            await ctx.stripe.suspend();
            await sleep(ctx.rng.int(1_500, 3_000));
            await ctx.stripe.resume();
            ctx.log('processor: back');
          },
          async () => {
            // The app dies while the processor holds charges it has already made.
            await ctx.stripeRule({ ...charges, delay_ms: 3_000, after: true, count: 4 });
            await sleep(ctx.rng.int(500, 1_500));
            await ctx.killApp(ctx.apps[0], 'app_group');
            await ctx.apps[0].start();
          },
          async () => {
            await ctx.stripeRule({ ...charges, delay_ms: 3_000, after: true, count: 4 });
            await sleep(ctx.rng.int(500, 1_500));
            await ctx.killWorker(ctx.workers[0]);
            await ctx.workers[0].start();
          },
        ];
        // Every kind once, in a random order, then a few more at random.
        const order = plan.map((p) => ({ p, k: ctx.rng.next() })).sort((x, y) => x.k - y.k).map((x) => x.p);
        for (let i = 0; i < 3; i++) order.push(ctx.rng.pick(plan));
        for (const step of order) {
          await step(ctx);
          await sleep(ctx.rng.int(1_500, 3_000));
        }
      },
    });
    scenarios.push(s);
    expectClean(s.report);
    expect(s.report.kills.app_group + s.report.kills.worker).toBeGreaterThanOrEqual(2);
  });

  it(`causes at least ${MIN_KILLS} kills in the run`, () => {
    console.log(`[faults] kills: ${JSON.stringify(kills)}`);
    expect(totalKills()).toBeGreaterThanOrEqual(MIN_KILLS);
  });

  it('the checks find a double charge, a missing paid-for unit, a lost event, a double grant and a lost webhook', async () => {
    const s = scenarios.at(-1);
    expect(s, 'a scenario ran').toBeDefined();
    const { sql, stripe, world } = s!.evidence;
    const co = world.companyId;
    // A second payment for a charge that was paid.
    const [paid] = (await stripe.paymentIntents.list({ limit: 100 }).autoPagingToArray({ limit: 10_000 })).filter((pi) => pi.status === 'succeeded' && pi.metadata?.reason === 'plan_renewal');
    expect(paid, 'a paid renewal').toBeDefined();
    await stripe.paymentIntents.create({ amount: paid.amount, currency: 'usd', customer: paid.customer as string, payment_method: paid.payment_method as string, automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, confirm: true, off_session: true, metadata: paid.metadata });
    // A refill paid at the processor, recorded as failed, its units gone.
    const [refill] = await sql<{ id: string; balance_id: string; amount: string }[]>`select t.charge_id as id, t.balance_id, t.amount::text from transactions t join charges c on c.id = t.charge_id where c.company_id = ${co} and c.reason = 'refill_threshold' limit 1`;
    expect(refill, 'a paid refill').toBeDefined();
    await sql`update charges set status = 'failed' where id = ${refill.id}`;
    await sql`delete from transactions where charge_id = ${refill.id}`;
    await sql`update balances set amount = amount - ${refill.amount}::numeric where id = ${refill.balance_id}`;
    // An acknowledged event lost with its ledger row.
    const [event] = await sql<{ id: string; key: string; balance_id: string; amount: string }[]>`select e.id, e.idempotency_key as key, t.balance_id, t.amount::text from events e join transactions t on t.event_id = e.id where e.company_id = ${co} limit 1`;
    await sql`delete from transactions where event_id = ${event.id}`;
    await sql`delete from events where id = ${event.id}`;
    await sql`update balances set amount = amount - ${event.amount}::numeric where id = ${event.balance_id}`;
    // A grant applied twice.
    const [grant] = await sql<{ id: string; balance_id: string; amount: string; description: string }[]>`select id, balance_id, amount::text, description from transactions where company_id = ${co} and type = 'grant' limit 1`;
    await sql`insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, created_at)
      select 'tx_tampered', account_id, company_id, balance_id, denomination, type, description, amount, 0, amount, created_at from transactions where id = ${grant.id}`;
    await sql`update balances set amount = amount + ${grant.amount}::numeric where id = ${grant.balance_id}`;
    // A webhook notification that never arrived.
    const [delivery] = await sql<{ id: string }[]>`select id from webhook_deliveries where company_id = ${co} and status = 'succeeded' limit 1`;
    expect(delivery, 'a delivered crossing').toBeDefined();
    const delivered = new Set(s!.evidence.delivered);
    delivered.delete(delivery.id);

    const { failures } = await checkInvariants({ ...s!.evidence, delivered });
    const text = failures.join('\n');
    expect(text).toContain(`charge ${paid.metadata.charge_id} was paid 2 times at the processor`);
    expect(text).toMatch(new RegExp(`paid \\d+ cents for charge ${refill.id}, recorded as failed: what it paid for is missing`));
    expect(text).toMatch(new RegExp(`acknowledged event ${event.key} \\(\\w+\\) is stored 0 times`));
    expect(text).toContain('was acknowledged and is in the ledger 2 times');
    expect(text).toContain(`delivery ${delivery.id}`);
    expect(text).toMatch(/the client expects/);
  });
});
