import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SERVER_TEST_TIMEOUT, startAppServer, type AppServer } from '../lib/testing/servers';
import { startLocalStripe } from '../local-stripe/server';
import { migratedDataDir } from '../lib/testing/templates';
import { buildSdkPackage, tsc } from '../sdk/test/package';

const root = path.resolve(__dirname, '..');

/** The bash blocks of the README's tour, in order, exactly as a reader would paste them. */
export function tourBlocks(readme: string): string[] {
  const start = readme.indexOf('<!-- tour:start -->');
  const end = readme.indexOf('<!-- tour:end -->');
  const section = readme.slice(start, end);
  return [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/** The TypeScript tour: the one ts block between the sdk-tour markers. */
export function sdkTour(readme: string): string {
  const start = readme.indexOf('<!-- sdk-tour:start -->');
  const end = readme.indexOf('<!-- sdk-tour:end -->');
  const blocks = [...readme.slice(start, end).matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  if (start < 0 || end < 0 || blocks.length !== 1) throw new Error('README.md: expected one ts block between the sdk-tour markers');
  return blocks[0];
}

/** Runs a command without blocking this process (the local Stripe server answers from its event loop). */
function run(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

// Both tours run once, against one server on the embedded database (the quick start's own
// setup), started as the tour starts the service. Each registers a company of its own.
let started: Promise<{ server: AppServer; stripe: { close: () => Promise<void> } }> | undefined;
const tourServer = () =>
  (started ??= (async () => {
    const stripe = await startLocalStripe({ port: 0 });
    const server = await startAppServer({
      DATA_DIR: await migratedDataDir('tour-'),
      ADMIN_TOKEN: 'dev-admin-token-local',
      // As the tour starts the service: its webhook receiver listens on 127.0.0.1.
      WEBHOOK_ALLOW_PRIVATE: '1',
      // As the tour starts it: the test clock, moved by the tour's last step.
      BILLING_TEST_CLOCK: '1',
      STRIPE_API_URL: stripe.url,
      APP_SECRET: '',
    });
    return { server, stripe };
  })());
afterAll(async () => {
  const shared = await started?.catch(() => undefined);
  await shared?.server.stop();
  await shared?.stripe.close();
});

describe('the README tour', () => {
  it('runs every command of the five-minute tour against a started server', { timeout: SERVER_TEST_TIMEOUT }, async () => {
    const { server } = await tourServer();
    const blocks = tourBlocks(fs.readFileSync(path.join(root, 'README.md'), 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    // Asynchronous on purpose: the local Stripe server answers from this process's event loop.
    const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('bash', ['-euo', 'pipefail', '-c', blocks.join('\n')], { cwd: root, env: { ...process.env, BASE: server.url, ADMIN_TOKEN: 'dev-admin-token-local' } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
      child.on('close', (status) => {
        clearTimeout(timer);
        resolve({ status, stdout, stderr });
      });
    });
    const out = run.stdout;
    expect(run.status, `${out}\n${run.stderr}\n${server.output()}`).toBe(0);
    const lines = out.split('\n');
    expect(lines).toContain('plan_status=ACTIVE');
    expect(lines).toContain('tokens=1000');
    expect(lines).toContain('990');
    expect(lines).toContain('tokens=964.5');
    expect(lines).toContain('gated=402');
    expect(lines).toContain('delivery=succeeded');
    expect(out).toMatch(/POST \/billing id=whd_\w+ basic-user=acme/);
    expect(out).toContain('"topic":"negative_balance"');
    expect(lines).toContain('2000');
    // The promotional grant: what expires when, then the expiry in the ledger, naming the grant.
    const next = lines.find((l) => l.startsWith('next_expiry='));
    expect(next).toMatch(/^next_expiry=100 at \d{4}-\d\d-\d\dT/);
    const at = lines.findIndex((l) => /^grant=cg_\w+ credits=0$/.test(l));
    expect(at, lines.slice(-5).join('\n')).toBeGreaterThan(0);
    expect(lines[at - 1]).toBe(`expire -70 ${lines[at].split(' ')[0]}`);
    // Usage: the three chats of step 4, summed; the refused render is not usage.
    expect(lines[at + 1]).toBe('usage chat events=3 cost=30');
  });
});

describe('the README tour in TypeScript', () => {
  let consumer: string | undefined;
  afterAll(() => {
    if (consumer) fs.rmSync(consumer, { recursive: true, force: true });
  });

  it('type-checks and runs with the SDK installed as a package, against a started server', { timeout: SERVER_TEST_TIMEOUT }, async () => {
    const { server } = await tourServer();
    const built = buildSdkPackage();
    consumer = built.consumer;
    fs.writeFileSync(path.join(consumer, 'tour.mts'), sdkTour(fs.readFileSync(path.join(root, 'README.md'), 'utf8')));
    fs.writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, typeRoots: [path.join(root, 'node_modules/@types')], types: ['node'] },
        files: ['tour.mts'],
      }),
    );
    const typecheck = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: consumer });
    expect(typecheck.status, typecheck.stdout + typecheck.stderr).toBe(0);

    const tour = await run(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'tour.mts'], {
      cwd: consumer,
      env: { ...process.env, BASE: server.url, ADMIN_TOKEN: 'dev-admin-token-local' },
    });
    expect(tour.status, `${tour.stdout}\n${tour.stderr}\n${server.output()}`).toBe(0);
    const lines = tour.stdout.trim().split('\n');
    expect(lines.slice(0, 4)).toEqual(['plan_status=ACTIVE', 'tokens=1000', '990', 'tokens=964.5']);
    expect(lines[4]).toMatch(/^gated=402 rejected=ev_\w+$/);
    expect(lines[5]).toBe('verified negative_balance balance=-1035.5');
    // Every ledger row, newest first, through pages of two: the render drew what the plan's grant
    // had left (one row naming it) and went below zero (a row of its own).
    expect(lines.slice(6, -1)).toEqual(['event -1035.5 -> -1035.5', 'event -964.5 -> 0', 'event -5.5 -> 964.5', 'event -10 -> 970', 'event -10 -> 980', 'event -10 -> 990', 'plan_grant 1000 -> 1000']);
    expect(lines[lines.length - 1]).toBe('2000');
  });
});
