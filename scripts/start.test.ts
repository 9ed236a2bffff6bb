import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../lib/testing/servers';
import { migratedDataDir } from '../lib/testing/templates';

const root = path.resolve(__dirname, '..');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/**
 * The tests' environment without its NODE_ENV, STRIPE_API_URL and test settings (the tests' own
 * allow private webhook destinations: never with NODE_ENV=production).
 */
function testsEnv(): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['NODE_ENV', 'STRIPE_API_URL', 'WEBHOOK_ALLOW_PRIVATE', 'BILLING_TEST_CLOCK']) delete base[name];
  return base;
}

/**
 * `npm start` on a free port with a DATA_DIR of its own (empty, or with `migrated` a copy of the
 * migrated template, for a test that is not about the first start), and `env` over testsEnv().
 */
async function launch(env: Record<string, string> = {}, { migrated = false } = {}) {
  if (!fs.existsSync(path.join(root, '.next/BUILD_ID'))) throw new Error('run `next build` first (npm test builds before the server tests)');
  const port = await freePort();
  const dataDir = migrated ? await migratedDataDir('billing-start-') : fs.mkdtempSync(path.join(os.tmpdir(), 'billing-start-'));
  dirs.push(dataDir);
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: root,
    env: { ...testsEnv(), PORT: String(port), DATA_DIR: dataDir, ADMIN_TOKEN: 'start-test-admin-token', APP_SECRET: '', ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  /** Resolves once `probe` answers 2xx; throws with the output so far if the process ends or takes two minutes. */
  const answers = async (probe: string) => {
    for (let i = 0; !(await fetch(`http://127.0.0.1:${port}${probe}`).then((r) => r.ok, () => false)); i++) {
      if (child.exitCode !== null || child.signalCode !== null || i > 1200) throw new Error(`npm start did not start the server:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** SIGTERM, unless it has ended already; resolves once it has. */
  const end = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return { child, url: `http://127.0.0.1:${port}`, output: () => out, exited, answers, end };
}

/**
 * `npm start` with `env` until Next.js is starting (the bundled Stripe server, when started,
 * comes up before it); its output so far.
 */
async function startOnce(env: Record<string, string>): Promise<string> {
  // A migrated copy: a stop while an empty DATA_DIR migrates waits for the migrations (seconds).
  const started = await launch(env, { migrated: true });
  try {
    for (let i = 0; !started.output().includes('Next.js'); i++) {
      if (started.child.exitCode !== null) throw new Error(`npm start exited early:\n${started.output()}`);
      if (i > 1200) throw new Error(`npm start did not start Next.js:\n${started.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return started.output();
  } finally {
    await started.end();
  }
}

// Not about the database: runs once, with the embedded one. That it does start the bundled
// server for a local try-out, the browser tests show (they pay through it).
describe('npm start and the test settings', () => {
  /** `npm start` refused at its configuration check, before anything is built or started. */
  function refused(env: Record<string, string>): string {
    const run = spawnSync(process.execPath, ['scripts/start.mjs'], { cwd: root, env: { ...testsEnv(), PORT: '0', APP_SECRET: '', ...env } as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 120_000 });
    const out = `${run.stdout}${run.stderr}`;
    expect(run.status, out).toBe(2);
    expect(out).not.toContain('local stripe listening');
    return out;
  }

  it('refuses BILLING_TEST_CLOCK=1 and WEBHOOK_ALLOW_PRIVATE=1 with NODE_ENV=production, naming each', () => {
    const out = refused({ NODE_ENV: 'production', BILLING_TEST_CLOCK: '1', WEBHOOK_ALLOW_PRIVATE: '1' });
    expect(out).toContain('BILLING_TEST_CLOCK=1 is refused with NODE_ENV=production');
    expect(out).toContain('WEBHOOK_ALLOW_PRIVATE=1 is refused with NODE_ENV=production');
  });

  it('refuses them with a live key in the environment, without repeating the key, whatever NODE_ENV says', () => {
    const out = refused({ NODE_ENV: 'development', WEBHOOK_ALLOW_PRIVATE: '1', ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1', MY_STRIPE_KEY: 'sk_live_start_test_123' });
    expect(out).toContain('WEBHOOK_ALLOW_PRIVATE=1 is refused while MY_STRIPE_KEY holds a live Stripe key');
    expect(out).not.toContain('sk_live_start_test_123');
  });
});

describe('npm start and the bundled local Stripe server', () => {
  it('does not start it in production, and says why and what to set instead', async () => {
    const out = await startOnce({ NODE_ENV: 'production' });
    expect(out).toContain('not starting the bundled local Stripe server, because NODE_ENV is production');
    expect(out).toContain('set STRIPE_API_URL');
    expect(out).not.toContain('local stripe listening');
  });

  it('hands over to the server: one process, serving itself, whose end (a kill by signal too) is npm start\'s own', async () => {
    const { child, output, exited, answers, end } = await launch({ NODE_ENV: 'production' });
    try {
      await answers('/livez');
      // No launcher left beside the server: the process npm started serves, with no child of its own.
      const children = spawnSync('ps', ['--ppid', String(child.pid), '-o', 'pid=']).stdout.toString().trim().split(/\s+/).filter(Boolean);
      expect(children, output()).toEqual([]);
      // The process started as `node scripts/start.mjs` is now the server (Next.js names it so).
      expect(fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8')).toContain('next-server');
      // Ended as the kernel's out-of-memory killer would: npm sees the signal, a failure.
      child.kill('SIGKILL');
      expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    } finally {
      await end();
    }
  }, 120_000);

  it('runs the bundled local Stripe server in that same process, and pays through it', async () => {
    // Already migrated: the bundled Stripe server and the payment are the subject, not the migrations.
    const { child, url, output, answers, end } = await launch({}, { migrated: true });
    try {
      await answers('/readyz');
      expect(output()).toMatch(/local stripe listening on http:\/\/127\.0\.0\.1:\d+/);
      expect(spawnSync('ps', ['--ppid', String(child.pid), '-o', 'pid=']).stdout.toString().trim()).toBe('');
      const operator = { authorization: 'Bearer start-test-admin-token', 'content-type': 'application/json' };
      const company = await (await fetch(`${url}/v1/companies`, { method: 'POST', headers: operator, body: JSON.stringify({ name: 'Start Co', email: 'ops@start.test', processor_key: 'sk_test_start', processor_publishable_key: 'pk_test_start' }) })).json();
      const auth = { authorization: `Basic ${Buffer.from(`${company.data.id}:${company.data.api_key}`).toString('base64')}`, 'content-type': 'application/json' };
      const account = await fetch(`${url}/v1/companies/${company.data.id}/accounts`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'Ada', email: 'ada@start.test', token: 'tok_visa' }) });
      expect(account.status).toBe(200);
      const paid = await fetch(`${url}/v1/accounts/${(await account.json()).data.id}/deposit`, { method: 'POST', headers: auth, body: JSON.stringify({ denomination: 'credits', amount_to_deposit: 10, amount_to_charge: 500 }) });
      expect(paid.status, await paid.clone().text()).toBe(200);
    } finally {
      await end();
    }
  }, 180_000);

  it('does not start it when a live key is configured', async () => {
    const out = await startOnce({ STRIPE_SECRET_KEY: 'rk_live_configured' });
    expect(out).toContain('not starting the bundled local Stripe server, because STRIPE_SECRET_KEY holds a live Stripe key');
    expect(out).not.toContain('rk_live_configured');
    expect(out).not.toContain('local stripe listening');
  });
});
