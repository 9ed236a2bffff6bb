import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalStripe, type LocalStripeServer } from '../local-stripe/server';
import { startReceiver, type Receiver } from '../lib/testing/webhook-receiver';
import { SERVER_TEST_TIMEOUT, freePort } from '../lib/testing/servers';
import { migratedDataDir } from '../lib/testing/templates';
import {
  assembleImage,
  buildPathInRepo,
  emptyPostgresDatabase,
  readDockerfile,
  root,
  runInImage,
  runtimeStage,
  startInImage,
  startServer,
  stop,
  waitFor,
  type Proc,
} from '../lib/testing/image';

const onPostgres = process.env.TEST_DB === 'postgres';
const ADMIN = 'image-admin-token';

/** The patterns of .dockerignore, as names at the top of the build context. */
function dockerIgnored(name: string): boolean {
  const patterns = fs
    .readFileSync(path.join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  let ignored = false;
  for (const p of patterns) {
    const negated = p.startsWith('!');
    const re = new RegExp(`^${(negated ? p.slice(1) : p).replace(/\/$/, '').replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/|$)`);
    if (re.test(name)) ignored = !negated;
  }
  return ignored;
}

describe.skipIf(onPostgres)('the Dockerfile', () => {
  const stages = readDockerfile();
  const runtime = runtimeStage(stages);

  it('copies only paths that exist: the build context before the build, and the build outputs after it', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'runtime']);
    const fromContext = stages.flatMap((s) => s.copies.filter((c) => !c.from));
    expect(fromContext.length).toBeGreaterThan(0);
    for (const c of fromContext) for (const src of c.sources) expect(fs.existsSync(path.join(root, src)), `COPY ${src}`).toBe(true);
    const fromBuild = runtime.copies;
    expect(fromBuild.length).toBeGreaterThanOrEqual(5);
    for (const c of fromBuild) {
      expect(c.from, `COPY ${c.sources.join(' ')}`).toBe('build');
      for (const src of c.sources) expect(fs.existsSync(buildPathInRepo(stages, c.from!, src)), `COPY --from=build ${src} (npm run build makes it)`).toBe(true);
    }
    // What the image runs is among what it copies.
    const copied = fromBuild.flatMap((c) => c.sources.map((s) => path.posix.relative('/app', s)));
    for (const file of ['.next/standalone', '.next/static', 'drizzle', 'dist', 'scripts/serve.mjs', 'scripts/healthcheck.mjs']) expect(copied).toContain(file);
    expect(runtime.cmd).toEqual(['node', 'scripts/serve.mjs']);
    expect(runtime.healthcheck).toEqual(['node', 'scripts/healthcheck.mjs']);
  });

  it('runs as a non-root user on Node 20, and keeps local builds, data and secrets out of the build context', () => {
    const text = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    expect(text.match(/^FROM node:20[-\w.]*slim\b/gm)?.length).toBe(2);
    expect(text).toMatch(/^USER billing$/m);
    for (const name of ['node_modules', '.next', 'dist', '.data', '.test-data', '.git', '.env', '.env.local']) expect(dockerIgnored(name), name).toBe(true);
    for (const name of ['package.json', 'package-lock.json', 'app', 'lib', 'components', 'drizzle', 'scripts', 'next.config.mjs', 'instrumentation.ts', 'tsconfig.json', 'postcss.config.mjs']) {
      expect(dockerIgnored(name), name).toBe(false);
    }
  });

  it('compose runs the migration step, app containers that neither migrate nor work, and a worker, from the commands the image holds', () => {
    const compose = fs.readFileSync(path.join(root, 'compose.yaml'), 'utf8');
    expect(compose).toMatch(/image: postgres:15\b/);
    expect(compose).toMatch(/^ {2}migrate:\n(?:.*\n)*? {4}command: \["node", "dist\/migrate\.mjs"\]/m);
    expect(compose).toMatch(/^ {2}worker:\n(?:.*\n)*? {4}command: \["node", "dist\/worker\.mjs"\]/m);
    expect(compose).toMatch(/^ {2}app:\n(?:.*\n)*? {6}WORKER: "0"/m);
    expect(compose).toMatch(/^x-environment:[\s\S]*?MIGRATE: "0"/m);
    expect(compose).toMatch(/condition: service_completed_successfully/);
    for (const [service, port] of [['app', '3000'], ['worker', '3001']]) {
      expect(compose, service).toMatch(new RegExp(`^ {2}${service}:\\n(?:.*\\n)*? {6}test: \\["CMD", "node", "scripts/healthcheck\\.mjs", "${port}"\\]`, 'm'));
    }
    expect(compose).toMatch(/^ {2}worker:\n(?:.*\n)*? {6}WORKER_HEALTH_PORT: "3001"/m);
    for (const file of ['dist/migrate.mjs', 'dist/worker.mjs', 'scripts/healthcheck.mjs']) expect(fs.existsSync(path.join(root, file)), file).toBe(true);
  });
});

describe('the image, started with plain node from only what the Dockerfile copies', () => {
  let dir: string;
  let stripe: LocalStripeServer;
  let receiver: Receiver;
  const procs: Proc[] = [];
  const tmp: string[] = [];
  let dbEnv: Record<string, string>;
  let common: Record<string, string>;

  /** Runs the image's HEALTHCHECK command in the image, with a container's environment. */
  const healthcheck = (env: Record<string, string>) => runInImage(dir, runtimeStage().healthcheck!, env, 10_000);

  beforeAll(async () => {
    dir = assembleImage();
    tmp.push(dir);
    stripe = await startLocalStripe({ port: 0 });
    receiver = await startReceiver();
    if (onPostgres) {
      dbEnv = { DATABASE_URL: await emptyPostgresDatabase() };
    } else {
      const data = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-image-data-'));
      tmp.push(data);
      dbEnv = { DATA_DIR: data };
    }
    common = { ...dbEnv, APP_SECRET: 'image-test-secret-of-at-least-32-bytes-0123456789', ADMIN_TOKEN: ADMIN, STRIPE_API_URL: stripe.url, WEBHOOK_ALLOW_PRIVATE: '1', ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1', WORKER_INTERVAL_MS: '200' };
  });
  afterAll(async () => {
    for (const p of procs) p.signal('SIGKILL');
    await receiver?.close();
    await stripe?.close();
    for (const d of tmp) fs.rmSync(d, { recursive: true, force: true });
  });

  it('refuses the test settings in production unless the tests opt out, and with live keys even then', { timeout: SERVER_TEST_TIMEOUT }, async () => {
    const { ALLOW_TEST_SETTINGS_IN_PRODUCTION: _, ...production } = common;
    for (const [env, said] of [
      [production, /WEBHOOK_ALLOW_PRIVATE=1 is refused with NODE_ENV=production/],
      [{ ...production, WEBHOOK_ALLOW_PRIVATE: '0', BILLING_TEST_CLOCK: '1' }, /BILLING_TEST_CLOCK=1 is refused with NODE_ENV=production/],
      [{ ...common, STRIPE_SECRET_KEY: 'sk_live_image_test' }, /WEBHOOK_ALLOW_PRIVATE=1 is refused while STRIPE_SECRET_KEY holds a live Stripe key/],
    ] as const) {
      const { status, output } = await runInImage(dir, runtimeStage().cmd!, { PORT: '0', HOSTNAME: '127.0.0.1', ...env, WORKER: '0' });
      expect(status, output).toBe(2);
      expect(output).toMatch(said);
      expect(output).not.toContain('sk_live_image_test');
    }
  });

  it.skipIf(!onPostgres)('a worker and a server started before the migrations wait for them, then check the stored keys before any work', { timeout: 2 * SERVER_TEST_TIMEOUT }, async () => {
    const env: Record<string, string> = { ...common, DATABASE_URL: await emptyPostgresDatabase(), MIGRATE: '0' };
    const probePort = await freePort();
    const probes = `http://127.0.0.1:${probePort}`;
    const worker = startInImage(dir, ['node', 'dist/worker.mjs'], { ...env, WORKER_HEALTH_PORT: String(probePort) });
    procs.push(worker);
    const server = await startServer(dir, { ...env, WORKER: '0' });
    procs.push(server);
    await waitFor(`${probes}/livez`, worker);
    // Several rounds of asking (WORKER_INTERVAL_MS=200): both wait, neither reads the missing schema.
    await new Promise((r) => setTimeout(r, 1_500));
    for (const [proc, url] of [[worker, probes], [server, server.url]] as const) {
      // Still opening the database at first ("starting"), for longer than those 1.5 s on a loaded machine.
      let notYet = await fetch(`${url}/readyz`);
      let message = (await notYet.json()).error?.message ?? '';
      for (const until = Date.now() + 60_000; notYet.status === 503 && /starting/.test(message) && Date.now() < until; ) {
        await new Promise((r) => setTimeout(r, 200));
        notYet = await fetch(`${url}/readyz`);
        message = (await notYet.json()).error?.message ?? '';
      }
      expect(notYet.status, proc.output()).toBe(503);
      expect(message).toMatch(/migration\(s\) not applied/);
    }
    expect(worker.output()).toMatch(/the worker waits for `npm run db:migrate`/);
    // Held still while the schema and a company with a live key arrive, so that each sees both at once.
    for (const proc of [worker, server]) proc.signal('SIGSTOP');
    try {
      const migrated = await runInImage(dir, ['node', 'dist/migrate.mjs'], { DATABASE_URL: env.DATABASE_URL });
      expect(migrated.status, migrated.output).toBe(0);
      const made = await runInImage(dir, ['node', 'dist/company-create.mjs', '--name', 'Live', '--email', 'ops@live.test', '--publishable-key', 'pk_live_image_test'], {
        DATABASE_URL: env.DATABASE_URL,
        APP_SECRET: env.APP_SECRET,
      });
      expect(made.status, made.output).toBe(0);
    } finally {
      for (const proc of [worker, server]) proc.signal('SIGCONT');
    }
    for (const proc of [worker, server]) {
      let bound: NodeJS.Timeout | undefined;
      const code = await Promise.race([proc.exited, new Promise((r) => (bound = setTimeout(() => r('still running after 30 s'), 30_000)))]);
      clearTimeout(bound);
      expect(code, proc.output()).toBe(2);
      expect(proc.output()).toMatch(/WEBHOOK_ALLOW_PRIVATE=1 is refused while a company of this database holds a live Stripe key/);
      expect(proc.output()).not.toContain('pk_live_image_test');
      // The image runs with NODE_ENV=production: the opt-out these tests use is said in the log.
      expect(proc.output()).toMatch(/WEBHOOK_ALLOW_PRIVATE=1 run with NODE_ENV=production only because ALLOW_TEST_SETTINGS_IN_PRODUCTION=1/);
    }
  });

  it('holds no tsx, no TypeScript and no repository node_modules', () => {
    expect(fs.existsSync(path.join(dir, 'node_modules/tsx'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'node_modules/typescript'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'lib'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'scripts/worker.ts'))).toBe(false);
    expect(path.relative(root, dir).startsWith('..')).toBe(true);
  });

  it.skipIf(onPostgres)('makes no demo company on a fresh embedded database, so no credentials reach the log', { timeout: SERVER_TEST_TIMEOUT }, async () => {
    const data = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-image-demo-'));
    tmp.push(data);
    const server = await startServer(dir, { DATA_DIR: data, STRIPE_API_URL: stripe.url, WORKER: '0', SHUTDOWN_DELAY_MS: '0' });
    procs.push(server);
    // A first start (initdb and every migration): more than the usual minute on a loaded machine.
    await waitFor(`${server.url}/readyz`, server, 200, 150_000);
    server.signal('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.output()).not.toMatch(/Demo company|sk_[A-Za-z0-9]|password/);
    expect(fs.existsSync(path.join(data, 'demo.json'))).toBe(false);
  });

  it.skipIf(onPostgres)('with SHUTDOWN_DELAY_MS, goes on answering new connections after SIGTERM with readiness 503, then exits 0', { timeout: SERVER_TEST_TIMEOUT }, async () => {
    // Already migrated: the stop is the subject, not a first start (the demo test above and the
    // full image test below start from an empty directory).
    const data = await migratedDataDir('billing-image-delay-');
    tmp.push(data);
    const server = await startServer(dir, { ...common, DATA_DIR: data, WORKER: '0', SHUTDOWN_DELAY_MS: '2000' });
    procs.push(server);
    await waitFor(`${server.url}/readyz`, server);
    const signalled = Date.now();
    server.signal('SIGTERM');
    // Until the process has taken the signal, readiness may still say 200.
    await waitFor(`${server.url}/readyz`, server, 503, 1_500);
    const late = await fetch(`${server.url}/livez`, { headers: { connection: 'close' } });
    expect(late.status).toBe(200);
    expect(Date.now() - signalled).toBeLessThan(2_000);
    expect(await server.exited).toBe(0);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(2_000);
    expect(server.output()).toMatch(/"delay_ms":2000/);
  });

  it.skipIf(onPostgres)('answers its probes while the start waits for the database: live, and not ready until it is', { timeout: SERVER_TEST_TIMEOUT }, async () => {
    // Already migrated: what is checked is the wait for the lock, not the migrations after it.
    const data = await migratedDataDir('billing-image-starting-');
    tmp.push(data);
    // Another container's lock on DATA_DIR, touched as its holder would: the start waits while it
    // is (however long the server takes to come up on a loaded machine), and takes it over once
    // it has gone untouched for 30 s.
    const lock = path.join(data, 'LOCK');
    fs.writeFileSync(lock, JSON.stringify({ pid: 4242, host: 'another-container', ns: 'pid:[4026531836]', token: 'theirs' }));
    const touch = (ago: number) => {
      const at = new Date(Date.now() - ago);
      fs.utimesSync(lock, at, at);
    };
    const holder = setInterval(() => touch(0), 1_000);
    let server: Awaited<ReturnType<typeof startServer>>;
    try {
      server = await startServer(dir, { ...common, DATA_DIR: data, WORKER: '0', SHUTDOWN_DELAY_MS: '0' });
      procs.push(server);
      const live = await fetch(`${server.url}/livez`);
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ data: { status: 'ok' } });
      for (const probe of ['/readyz', '/health']) {
        const starting = await fetch(`${server.url}${probe}`);
        expect(starting.status, probe).toBe(503);
        expect(starting.headers.get('request-id')).toMatch(/^req_/);
        expect((await starting.json()).error).toMatchObject({ type: 'service_unavailable', message: expect.stringMatching(/starting/) });
      }
      expect((await healthcheck({ PORT: new URL(server.url).port })).status, 'unhealthy while starting').toBe(1);
    } finally {
      clearInterval(holder);
    }
    // The other container is gone: its lock was last touched 31 s ago.
    touch(31_000);
    const port = new URL(server.url).port;
    await waitFor(`${server.url}/readyz`, server);
    expect((await healthcheck({ PORT: port })).status, 'healthy once ready').toBe(0);
    expect(server.output()).toMatch(/is locked by process 4242 on host another-container/);
    server.signal('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it.skipIf(onPostgres)("writes Next.js' own console lines without a hosted page's token", { timeout: SERVER_TEST_TIMEOUT }, async () => {
    // Already migrated: a stop while a fresh directory still migrates waits for the migrations.
    const data = await migratedDataDir('billing-image-console-');
    tmp.push(data);
    // What Next.js writes when a request fails outside the application, from inside the server process.
    const preload = path.join(data, 'console-line.cjs');
    fs.writeFileSync(
      preload,
      "if (require('node:worker_threads').isMainThread) setTimeout(() => console.error('Failed to handle request for /collect/tok_SECRETVALUE123?next=hidden-value'), 1500);",
    );
    // The image's 5 s of answering after SIGTERM (SHUTDOWN_DELAY_MS) is not what this test is about.
    const server = await startServer(dir, { ...common, DATA_DIR: data, WORKER: '0', SHUTDOWN_DELAY_MS: '0', NODE_OPTIONS: `--require ${preload}` });
    procs.push(server);
    for (let i = 0; i < 100 && !server.output().includes('Failed to handle request'); i++) await new Promise((r) => setTimeout(r, 100));
    server.signal('SIGTERM');
    await server.exited;
    expect(server.output()).toContain('Failed to handle request for /collect/[token]?next=[value]');
    expect(server.output()).not.toMatch(/SECRETVALUE|hidden-value/);
  });

  it('migrates, serves the API and the console, runs the worker with its probes, and stops cleanly on SIGTERM', { timeout: 2 * SERVER_TEST_TIMEOUT }, async () => {
    let worker: Proc | undefined;
    let workerProbes = '';
    if (onPostgres) {
      // A worker started before the migrations answers readiness 503, then 200 once they are applied.
      const probePort = await freePort();
      workerProbes = `http://127.0.0.1:${probePort}`;
      worker = startInImage(dir, ['node', 'dist/worker.mjs'], { ...common, MIGRATE: '0', WORKER_HEALTH_PORT: String(probePort) });
      procs.push(worker);
      await waitFor(`${workerProbes}/livez`, worker);
      const notYet = await fetch(`${workerProbes}/readyz`);
      expect(notYet.status).toBe(503);
      // The image's HEALTHCHECK asks the worker's probe port, in the worker container's environment.
      expect((await healthcheck({ PORT: '1', WORKER_HEALTH_PORT: String(probePort) })).status).toBe(1);
      expect((await notYet.json()).error).toMatchObject({ type: 'service_unavailable', message: expect.stringMatching(/migration\(s\) not applied.*npm run db:migrate/) });

      const first = await runInImage(dir, ['node', 'dist/migrate.mjs'], dbEnv);
      expect(first.output).toMatch(/db:migrate: applied \d+ migration\(s\) to PostgreSQL/);
      expect(first.status).toBe(0);
      const again = await runInImage(dir, ['node', 'dist/migrate.mjs'], dbEnv);
      expect(again.output).toMatch(/is up to date/);
      expect(again.status).toBe(0);
      await waitFor(`${workerProbes}/readyz`, worker);
      expect(await (await fetch(`${workerProbes}/readyz`)).json()).toEqual({ data: { status: 'ok', database: 'postgres' } });
      expect(await (await fetch(`${workerProbes}/livez`)).json()).toEqual({ data: { status: 'ok' } });
      expect((await healthcheck({ PORT: '1', WORKER_HEALTH_PORT: String(probePort) })).status).toBe(0);
      // The port given as its argument wins (compose names each service's).
      expect((await runInImage(dir, [...runtimeStage().healthcheck!, String(probePort)], { PORT: '1', WORKER_HEALTH_PORT: '2' }, 10_000)).status).toBe(0);
    }

    // The operator command, bundled (on the embedded database before the server holds DATA_DIR).
    // On the embedded database it is the first to open the empty DATA_DIR: PGlite's initdb and
    // every migration, in WebAssembly, which takes over a minute on a loaded 2-core machine.
    const made = await runInImage(dir, ['node', 'dist/company-create.mjs', '--name', 'Bundled', '--email', 'ops@bundled.test', '--json'], common, 150_000);
    expect(made.status, made.output).toBe(0);
    const bundled = JSON.parse(made.output.trim().split('\n').pop()!);
    expect(bundled.id).toMatch(/^c_/);
    // Rotation, bundled: the company's stored secrets are all sealed with the current key.
    const rotated = await runInImage(dir, ['node', 'dist/secrets-rotate.mjs'], common);
    expect(rotated.status, rotated.output).toBe(0);
    expect(rotated.output).toMatch(/Every stored secret is sealed with the current APP_SECRET/);

    const server = await startServer(dir, onPostgres ? { ...common, MIGRATE: '0', WORKER: '0' } : common);
    procs.push(server);
    const { url } = server;
    const kind = onPostgres ? 'postgres' : 'embedded';
    expect(await (await fetch(`${url}/livez`)).json()).toEqual({ data: { status: 'ok' } });
    await waitFor(`${url}/readyz`, server);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.headers.get('request-id')).toMatch(/^req_/);
    expect(await ready.json()).toEqual({ data: { status: 'ok', database: kind } });
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ data: { status: 'ok', database: kind } });

    const json = async (method: string, p: string, auth: string, body?: unknown) => {
      const res = await fetch(`${url}${p}`, {
        method,
        headers: { authorization: auth, ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const me = await json('GET', '/v1/companies', `Basic ${Buffer.from(`${bundled.id}:${bundled.api_key}`).toString('base64')}`);
    expect(me.status).toBe(200);
    expect(me.body.data[0].id).toBe(bundled.id);

    const company = await json('POST', '/v1/companies', `Bearer ${ADMIN}`, {
      name: 'Image Co',
      email: 'billing@image.test',
      processor_key: 'sk_test_image',
      processor_publishable_key: 'pk_test_image',
      password: 'image-password-1',
    });
    expect(company.status, JSON.stringify(company.body)).toBe(200);
    const auth = `Basic ${Buffer.from(`${company.body.data.id}:${company.body.data.api_key}`).toString('base64')}`;
    const co = company.body.data.id;
    const plan = await json('POST', `/v1/companies/${co}/plans`, auth, {
      name: 'Pro',
      charge_amount: 2000,
      billing_period: 'month',
      balances: [{ amount: 1000, denomination: 'tokens' }],
      billing_rules: [{ type: 'chat', amount: 10, denomination: 'tokens' }],
    });
    expect(plan.status, JSON.stringify(plan.body)).toBe(200);
    // Charges the card through the Stripe SDK bundled in the standalone build.
    const account = await json('POST', `/v1/companies/${co}/accounts`, auth, { name: 'Ada', email: 'ada@image.test', plan_id: plan.body.data.id, token: 'tok_visa' });
    expect(account.status, JSON.stringify(account.body)).toBe(200);
    expect(account.body.data.plan_status).toBe('ACTIVE');
    const acct = account.body.data.id;

    const hook = await json('POST', `/v1/companies/${co}/webhooks`, auth, { url: receiver.url });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    expect((await json('POST', `/v1/companies/${co}/webhooks/${hook.body.data.id}/subscribe/negative_balance`, auth)).status).toBe(200);

    const event = await json('POST', `/v1/accounts/${acct}/events`, auth, { type: 'chat' });
    expect(event.status, JSON.stringify(event.body)).toBe(200);
    expect(event.body.data.balance.amount).toBe(990);
    const spend = await json('POST', `/v1/accounts/${acct}/events`, auth, { type: 'render', cost_override_amount: 2000, cost_override_denomination: 'tokens' });
    expect(spend.status).toBe(200);
    const balance = await json('GET', `/v1/accounts/${acct}/balance/tokens`, auth);
    expect(balance.body.data.amount).toBe(-1010);

    // The webhook goes out from the worker: the bundled worker process on PostgreSQL (the app
    // has WORKER=0), the server's own on the embedded database.
    const [delivered] = await receiver.waitFor(1, 20_000);
    expect(delivered.json).toMatchObject({ topic: 'negative_balance', account_id: acct });

    const signIn = await fetch(`${url}/console/sign-in`);
    expect(signIn.status).toBe(200);
    const page = await signIn.text();
    expect(page).toContain('Sign in to the billing console');
    expect(page).toMatch(/type="password"/);
    const css = /href="(\/_next\/static\/[^"]+\.css)"/.exec(page)?.[1];
    expect(css, 'the page links its stylesheet').toBeTruthy();
    expect((await fetch(`${url}${css}`)).status).toBe(200);

    expect((await healthcheck({ PORT: new URL(url).port })).status).toBe(0);
    expect(await stop(server)).toBe(0);
    expect((await healthcheck({ PORT: new URL(url).port })).status, 'unhealthy once stopped').toBe(1);
    if (worker) {
      expect(await stop(worker)).toBe(0);
      expect(worker.output()).toMatch(/worker probes on port \d+/);
    } else {
      // PGlite closed and the DATA_DIR lock given back.
      expect(fs.existsSync(path.join(dbEnv.DATA_DIR, 'LOCK'))).toBe(false);
    }
  });

  it.skipIf(onPostgres)('refuses WEB_CONCURRENCY on the embedded database, and nonsense in it, with the reason', async () => {
    const cmd = runtimeStage().cmd!;
    const many = await runInImage(dir, cmd, { ...common, WEB_CONCURRENCY: '2' });
    expect(many.status).toBe(2);
    expect(many.output).toMatch(/WEB_CONCURRENCY=2 needs PostgreSQL \(DATABASE_URL\)/);
    const bad = await runInImage(dir, cmd, { ...common, WEB_CONCURRENCY: 'lots' });
    expect(bad.status).toBe(2);
    expect(bad.output).toMatch(/WEB_CONCURRENCY must be a whole number/);
    // The image checks the whole configuration with the bundled schema (dist/env.mjs).
    const wrong = await runInImage(dir, cmd, { ...common, WORKER_INTERVAL_MS: 'abc', RATE_LIMIT_PER_SECOND: 'abc' });
    expect(wrong.status).toBe(2);
    expect(wrong.output).toContain('WORKER_INTERVAL_MS must be a whole number of milliseconds, 10 to 2147483647; got \\"abc\\".');
    expect(wrong.output).toContain('RATE_LIMIT_PER_SECOND must be a whole number of requests per second (0 turns the limit off); got \\"abc\\".');
    const worker = await runInImage(dir, ['node', 'dist/worker.mjs'], { ...common, WORKER_HEALTH_PORT: '70000' });
    expect(worker.status).toBe(2);
    expect(worker.output).toContain('WORKER_HEALTH_PORT must be a TCP port number (0 to 65535); got \\"70000\\".');
  });
});
