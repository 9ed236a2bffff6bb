import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import postgres from 'postgres';
import Stripe from 'stripe';
import { startLocalStripe, type LocalStripeServer } from '../lib/processor/local-stripe/server';
import { driverTarget } from '../lib/db/hosts';
import { freePort } from '../lib/testing/servers';
import { startReceiver, type Receiver } from '../lib/testing/webhook-receiver';
import { checkInvariants, type Evidence } from './checks';
import { Client, type Stats } from './client';
import { App, Cluster, kills, root, sleep, Worker } from './processes';
import type { Random } from './random';
import { setUp, Workload } from './workload';

export const ADMIN_TOKEN = 'faults-admin-token';
const APP_SECRET = 'faults-secret-of-at-least-32-bytes-0123456789';
/** Several clients at once, each with one request in flight. */
const ACTORS = 6;
/** Share of webhook notifications whose first attempt the receiver answers with 500. */
const FIRST_ATTEMPT_FAILURES = 0.15;

export type FaultContext = {
  apps: App[];
  workers: Worker[];
  /** The PostgreSQL cluster the scenario made its database on (none when given a database URL). */
  cluster?: Cluster;
  stripe: LocalStripeServer;
  rng: Random;
  log: (line: string) => void;
  /** Adds a failure rule to the local Stripe server (POST /__control/fail). */
  stripeRule: (rule: Record<string, unknown>) => Promise<void>;
  killApp: (app: App, kind: 'app_group' | 'app') => Promise<void>;
  killWorker: (worker: Worker) => Promise<void>;
  crashPostgres: () => Promise<void>;
  /** Waits until every app process answers /readyz with 200. */
  ready: () => Promise<void>;
};

export type Topology = { apps: number; webConcurrency?: number; workers: number };

export type Report = {
  name: string;
  seconds: number;
  kills: Record<string, number>;
  stats: Stats;
  counts: Record<string, number>;
  failures: string[];
};

export type Scenario = { report: Report; evidence: Evidence; close: () => Promise<void> };

export type ScenarioOptions = {
  name: string;
  rng: Random;
  topology: Topology;
  faults: (ctx: FaultContext) => Promise<void>;
  /** A cluster to make the scenario's database on... */
  cluster?: Cluster;
  /** ...or the URL of a database that exists (several hosts allowed: the failover test's). */
  databaseUrl?: string;
  /** More settings for the app processes only (the worker processes get the common ones). */
  appEnv?: Record<string, string>;
  /** Fixed ports for the app processes, the local Stripe server and the webhook receiver. */
  ports?: { apps?: number[]; stripe?: number; receiver?: number };
};

export async function runScenario(opts: ScenarioOptions): Promise<Scenario> {
  const { name, cluster, rng, topology } = opts;
  const started = Date.now();
  const log = (line: string) => console.log(`[faults ${name} ${((Date.now() - started) / 1000).toFixed(1)}s] ${line}`);
  const killsBefore = { ...kills };
  const cleanup: (() => Promise<unknown> | unknown)[] = [];
  const close = async () => {
    for (const c of cleanup.reverse()) await Promise.resolve(c()).catch((err: unknown) => console.error(err));
  };

  try {
    const database = opts.databaseUrl ? 'given' : `faults_${name}`;
    let databaseUrl = opts.databaseUrl;
    if (!databaseUrl) {
      if (!cluster) throw new Error('runScenario needs a cluster or a database URL');
      const server = postgres(cluster.url('postgres'), { max: 1, onnotice: () => {} });
      await server.unsafe(`drop database if exists ${database}`);
      await server.unsafe(`create database ${database}`);
      await server.end();
      databaseUrl = cluster.url(database);
    }
    await migrate(databaseUrl);

    const stripe = await startLocalStripe({ port: opts.ports?.stripe ?? 0 });
    cleanup.push(() => stripe.close());
    const delivered = new Set<string>();
    const receiver: Receiver = await startReceiver((_, req) => {
      const id = req.headers['webhook-id'] ?? '';
      const first = !delivered.has(id) && !receiverSaw(receiver, id);
      if (first && unitHash(`${rng.seed}:${id}`) < FIRST_ATTEMPT_FAILURES) return { status: 500 };
      delivered.add(id);
      return { status: 200 };
    }, opts.ports?.receiver ?? 0);
    cleanup.push(() => receiver.close());

    const env: Record<string, string> = {
      DATABASE_URL: databaseUrl,
      MIGRATE: '0',
      APP_SECRET,
      ADMIN_TOKEN,
      BILLING_TEST_CLOCK: '1',
      STRIPE_API_URL: stripe.url,
      // Short, so a processor that holds its answer leaves the charge's outcome unknown quickly.
      STRIPE_TIMEOUT_MS: '1200',
      WEBHOOK_ALLOW_PRIVATE: '1',
      WORKER_INTERVAL_MS: '200',
      SHUTDOWN_TIMEOUT_MS: '5000',
    };
    const apps: App[] = [];
    for (let i = 0; i < topology.apps; i++) {
      const port = opts.ports?.apps?.[i] ?? (await appPort(i));
      apps.push(new App(`${name}-app-${i}`, port, { ...env, ...opts.appEnv, WEB_CONCURRENCY: String(topology.webConcurrency ?? 1) }));
    }
    const workers = Array.from({ length: topology.workers }, (_, i) => new Worker(`${name}-worker-${i}`, env));
    cleanup.push(async () => {
      await Promise.all([...apps, ...workers].map((p) => p.stop()));
    });
    await Promise.all([...apps, ...workers].map((p) => p.start()));
    log(`${apps.length} app process group(s) (WEB_CONCURRENCY=${topology.webConcurrency ?? 1}), ${workers.length} worker process(es), database ${database}`);

    // Nothing may wait forever: a request still unacknowledged by then fails the scenario.
    const deadline = started + 240_000;
    const urls = () => apps.map((a) => a.url);
    const admin = new Client(urls, `Bearer ${ADMIN_TOKEN}`, () => deadline);
    const { world, api, model } = await setUp(admin, name, receiver.url);
    const workload = new Workload(api, admin, world, model, name, urls, ADMIN_TOKEN);
    await workload.start();
    log(`company ${world.companyId}, ${world.accounts.length} accounts on a daily plan`);

    const stripeRule = async (rule: Record<string, unknown>) => {
      const res = await fetch(`${stripe.url}/__control/fail`, { method: 'POST', body: JSON.stringify(rule) });
      if (res.status !== 200) throw new Error(`local Stripe refused the rule ${JSON.stringify(rule)}: ${await res.text()}`);
    };
    const ctx: FaultContext = {
      apps,
      workers,
      cluster,
      stripe,
      rng: rng.fork('faults'),
      log,
      stripeRule,
      killApp: async (app, kind) => {
        await app.kill();
        kills[kind]++;
        log(`kill -9 ${app.name} (group ${app.proc?.pid})`);
      },
      killWorker: async (worker) => {
        await worker.kill();
        kills.worker++;
        log(`kill -9 ${worker.name} (pid ${worker.proc?.pid})`);
      },
      crashPostgres: async () => {
        if (!cluster) throw new Error('no cluster to crash in this scenario');
        await cluster.crash();
        kills.postgres++;
        log('PostgreSQL stopped with -m immediate');
      },
      ready: async () => {
        for (const app of apps) {
          for (let i = 0; ; i++) {
            const status = await fetch(`${app.url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
              (r) => r.status,
              () => 0,
            );
            if (status === 200) break;
            if (i > 600) throw new Error(`${app.name} not ready again:\n${app.proc?.output().slice(-3000)}`);
            await sleep(50);
          }
        }
      },
    };

    // Load and faults at once.
    let running = true;
    const load = [
      ...Array.from({ length: ACTORS }, (_, i) => workload.actor(rng.fork(`actor-${i}`), () => running)),
      workload.conductor(rng.fork('conductor'), () => running),
    ];
    let faultError: unknown = null;
    await opts.faults(ctx).catch((err: unknown) => (faultError = err));
    await sleep(500);
    running = false;
    log('faults done; settling');

    // Settle: everything back up, the processor healthy, every request acknowledged...
    await fetch(`${stripe.url}/__control/fail`, { method: 'DELETE' });
    await stripe.resume();
    await Promise.all([...apps, ...workers].filter((p) => !p.proc?.running).map((p) => p.start()));
    let loadDone = false;
    const drained = Promise.all(load).then(() => (loadDone = true));
    // An Idempotency-Key whose request died with its process is free again 60 s (test clock) later.
    while (!loadDone) {
      await Promise.race([drained, sleep(1_500)]);
      if (!loadDone) await workload.advance(70);
    }
    log('every request acknowledged');
    // ...then the clock moves until nothing is left to do: pending charges reconciled, webhook
    // retries sent, leases of killed processes expired, holds expired, renewals made.
    const pending = async (now: number) => {
      const at = new Date(now).toISOString();
      const [row] = await checkSql`select
          (select count(*)::int from charges where company_id = ${world.companyId} and status = 'pending') as charges,
          (select count(*)::int from webhook_deliveries where company_id = ${world.companyId} and status in ('pending', 'sending')) as deliveries,
          (select count(*)::int from events where company_id = ${world.companyId} and state = 'pending') as holds,
          (select count(*)::int from jobs where status in ('queued', 'running') and run_at <= ${at}::timestamptz) as jobs,
          (select count(*)::int from accounts where company_id = ${world.companyId}
            and (renewal_locked_until is not null or next_plan_renewal <= ${at}::timestamptz or plan_status <> 'ACTIVE')) as renewals`;
      return row as Record<string, number>;
    };
    // Through the service's own choice of host: with several, the checks read the primary.
    const target = driverTarget(databaseUrl, 'the checks', postgres);
    const checkSql = postgres(target.url, { max: 2, onnotice: () => {}, ...(target.selector && { socket: target.selector.socket }) } as postgres.Options<Record<string, never>>);
    cleanup.push(() => checkSql.end());
    let left: Record<string, number> = {};
    const steps = [120, 3_700, 120, 600, 1_800, 3_600, 7_200];
    for (let i = 0; i < 40; i++) {
      await workload.advance(steps[Math.min(i, steps.length - 1)]);
      left = await pending(await workload.clockNow());
      log(`settling, left: ${JSON.stringify(left)}`);
      if (Object.values(left).every((n) => n === 0)) break;
      await sleep(300);
    }
    log(`settled (left: ${JSON.stringify(left)})`);

    const evidence: Evidence = {
      sql: checkSql,
      api,
      stripe: new Stripe(world.processorKey, { host: '127.0.0.1', port: stripe.port, protocol: 'http', maxNetworkRetries: 2 }),
      received: receiver.requests,
      delivered,
      world,
      model,
      now: new Date(await workload.clockNow()),
    };
    const findings = await checkInvariants(evidence);
    const failures = [...api.defects, ...findings.failures];
    if (faultError) failures.unshift(`the fault plan failed: ${String((faultError as Error).stack ?? faultError)}`);
    if (Object.values(left).some((n) => n > 0)) failures.push(`work left after settling: ${JSON.stringify(left)}`);
    const report: Report = {
      name,
      seconds: Math.round((Date.now() - started) / 100) / 10,
      kills: Object.fromEntries(Object.entries(kills).map(([k, n]) => [k, n - killsBefore[k as keyof typeof kills]])),
      stats: api.stats,
      counts: { ...findings.counts, singles: model.counts.singles, batches: model.counts.batches, transitions: model.counts.transitions, clock_advances: model.counts.advances },
      failures,
    };
    log(`kills ${JSON.stringify(report.kills)}; ${JSON.stringify(report.counts)}`);
    log(`requests ${report.stats.requests}, retried ${report.stats.retries}: ${JSON.stringify(report.stats.byOutcome)}`);
    if (failures.length) {
      for (const p of [...apps, ...workers]) log(`${p.name} output (tail):\n${p.proc?.output().slice(-4000)}`);
    }
    return { report, evidence, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** FAULTS_APP_PORT fixes the app processes' ports (it and the next ones), otherwise free ones. */
async function appPort(i: number): Promise<number> {
  const base = process.env.FAULTS_APP_PORT;
  return base ? Number(base) + i : freePort();
}

/** Whether the receiver already had a request for this webhook-id before the one being answered. */
function receiverSaw(receiver: Receiver, id: string): boolean {
  let n = 0;
  for (const r of receiver.requests) if (r.headers['webhook-id'] === id && ++n > 1) return true;
  return false;
}

/** A number in [0, 1) from a string: the same notification fails the same way in a replay. */
function unitHash(s: string): number {
  return createHash('sha256').update(s).digest().readUInt32BE(0) / 2 ** 32;
}

function migrate(databaseUrl: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'dist/migrate.mjs')], { cwd: root, env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`migrate failed (${code}): ${out}`))));
  });
}
