import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { api, useTestDatabase } from '../lib/testing/harness';
import { companies } from '../lib/db/schema';
import { migratedDataDir } from '../lib/testing/templates';

const t = useTestDatabase();
const root = path.resolve(__dirname, '..');
const tsx = path.join(root, 'node_modules/.bin/tsx');
const bundled = path.join(root, 'dist/company-create.mjs');
if (!fs.existsSync(bundled)) throw new Error('run `npm run build` first (npm test builds before these tests): dist/company-create.mjs is missing');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/**
 * A DATA_DIR copied from the migrated template: these tests are about the command, not about a
 * first start on an empty directory (PGlite's initdb and every migration, over a minute on a
 * loaded machine; scripts/image.test.ts runs the bundled command on an empty one).
 */
async function tempDataDir(): Promise<string> {
  const dir = await migratedDataDir('billing-cli-');
  dirs.push(dir);
  return dir;
}

/**
 * The command, against the test's PostgreSQL database or an embedded DATA_DIR: as the image runs
 * it, `node dist/company-create.mjs ...` (the same source, bundled by `npm run build`: a third of
 * a second of CPU to start where tsx takes two), or with `{ tsx: true }` as `npm run
 * company:create -- ...` runs it in a checkout, through tsx.
 */
function companyCreate(args: string[], env: Record<string, string>, input = '', { tsx: throughTsx = false } = {}) {
  const command = throughTsx ? [tsx, 'scripts/company-create.ts'] : [process.execPath, bundled];
  const r = spawnSync(command[0], [command[1], ...args], {
    cwd: root,
    encoding: 'utf8',
    input,
    env: { ...process.env, APP_SECRET: 'test-secret-of-at-least-32-bytes-0123456789', ...env },
    // A bound for a command that hangs, wide enough for tsx on a loaded machine.
    timeout: 150_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('npm run company:create', () => {
  it('registers a company whose API key works at once, and explains bad arguments', async () => {
    const env: Record<string, string> = t.kind === 'postgres' ? { DATABASE_URL: t.url! } : { DATA_DIR: await tempDataDir() };
    // What `npm run company:create` runs in a checkout; the other calls run the bundled command.
    expect(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts['company:create']).toBe('tsx scripts/company-create.ts');
    const made = companyCreate(['--name', 'Hooli', '--email', 'ops@hooli.test', '--processor-key', '-', '--json'], env, 'rk_test_hooli\n', { tsx: true });
    expect(made.stderr).toBe('');
    expect(made.status).toBe(0);
    const company = JSON.parse(made.stdout);
    expect(company).toMatchObject({ name: 'Hooli', email: 'ops@hooli.test', processor_configured: true });
    expect(company.id).toMatch(/^c_/);
    expect(company.api_key).toMatch(/^sk_/);
    if (t.kind === 'postgres') {
      const me = await api('GET', '/v1/companies', { auth: { companyId: company.id, apiKey: company.api_key } });
      expect(me.status).toBe(200);
      expect(me.body.data[0].id).toBe(company.id);
    }

    const plain = companyCreate(['--name', 'Hooli XYZ', '--email', 'xyz@hooli.test'], env);
    expect(plain.status).toBe(0);
    expect(plain.stdout).toMatch(/company id: c_\w+\nAPI key: +sk_\S+ +\(shown once/);

    const bad = companyCreate(['--name', 'Hooli', '--email', 'not-an-email'], env);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/email/);
    expect(bad.stderr).toMatch(/usage: npm run company:create/);
    const wrongKey = companyCreate(['--name', 'Hooli', '--email', 'a@hooli.test', '--processor-key', 'pk_test_1'], env);
    expect(wrongKey.status).toBe(2);
    expect(wrongKey.stderr).toMatch(/--processor-key/);
    const shortPassword = companyCreate(['--name', 'Hooli', '--email', 'b@hooli.test', '--password', 'elevenchars'], env);
    expect(shortPassword.status).toBe(2);
    expect(shortPassword.stderr).toContain('company:create: password must be at least 12 characters');
    const shortSecret = companyCreate(['--name', 'Hooli', '--email', 'c@hooli.test'], { ...env, APP_SECRET: 'test-secret' });
    expect(shortSecret.status).toBe(1);
    expect(shortSecret.stderr).toContain('company:create: APP_SECRET must be at least 32 bytes long (it has 11)');
    expect(shortSecret.stdout).toBe('');
  }, 240_000); // six command processes, up to 20 s each to start on a loaded machine

  it('reads the password and the processor key from standard input, and warns of them on the command line', async () => {
    const env: Record<string, string> = t.kind === 'postgres' ? { DATABASE_URL: t.url! } : { DATA_DIR: await tempDataDir() };
    const made = companyCreate(['--name', 'Stdin Co', '--email', 'ops@stdin.test', '--password', '-', '--processor-key', '-', '--json'], env, 'a-password-of-some-length\nrk_test_stdin\n');
    expect(made.stderr).toBe('');
    expect(made.status).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ email: 'ops@stdin.test', processor_configured: true });
    if (t.kind === 'postgres') {
      const [stored] = await t.database.db.select().from(companies).where(eq(companies.email, 'ops@stdin.test'));
      expect(stored.processorKeyEnc).toBeTruthy();
    }
    // What was read is checked as if it had been written out.
    const short = companyCreate(['--name', 'Stdin Co', '--email', 'short@stdin.test', '--password', '-'], env, 'elevenchars\n');
    expect(short.status).toBe(2);
    expect(short.stderr).toContain('company:create: password must be at least 12 characters');
    const visible = companyCreate(['--name', 'Argv Co', '--email', 'ops@argv.test', '--password', 'a-password-on-the-command-line'], env);
    expect(visible.status).toBe(0);
    expect(visible.stderr).toContain('--password on the command line is visible to other users of this machine');
  }, 120_000);

  it('refuses live keys while the processor is a stand-in (the bundled local server, any STRIPE_API_URL)', async () => {
    const env: Record<string, string> = t.kind === 'postgres' ? { DATABASE_URL: t.url! } : { DATA_DIR: await tempDataDir() };
    const standIn = { ...env, STRIPE_API_URL: 'http://127.0.0.1:9' };
    const live = companyCreate(['--name', 'Live', '--email', 'live@hooli.test', '--processor-key', 'rk_live_hooli', '--json'], standIn);
    expect(live.status).toBe(2);
    expect(live.stderr).toMatch(/company:create: --processor-key is a live key.*STRIPE_API_URL/);
    expect(live.stdout).toBe('');
    const livePublishable = companyCreate(['--name', 'Live', '--email', 'live@hooli.test', '--processor-key', 'rk_test_hooli', '--publishable-key', 'pk_live_hooli'], standIn);
    expect(livePublishable.status).toBe(2);
    expect(livePublishable.stderr).toMatch(/--publishable-key is a live key/);
    if (t.kind === 'postgres') {
      const stored = await t.database.db.select().from(companies).where(eq(companies.email, 'live@hooli.test'));
      expect(stored).toEqual([]);
    }
  });
});

describe.skipIf(t.kind === 'postgres' || process.env.TEST_DB === 'postgres')('the embedded database lock', () => {
  it('a second process refuses DATA_DIR while the first holds it, and takes it once the first is gone', async () => {
    const dir = await tempDataDir();
    // Plain node with tsx's loader, so holder.pid is the process that holds the lock.
    const holder = spawn(process.execPath, ['--import', 'tsx', '-e', `import('./lib/db/client.ts').then((m) => m.openEmbedded(${JSON.stringify(dir)})).then(() => { console.log('ready'); setInterval(() => {}, 1000); })`], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on('data', (d) => String(d).includes('ready') && resolve());
        holder.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
      });
      const second = companyCreate(['--name', 'Second', '--email', 'second@x.test'], { DATA_DIR: dir });
      expect(second.status).toBe(1);
      expect(second.stderr).toContain(`is in use by process ${holder.pid}`);
      expect(second.stderr).toContain('DATABASE_URL');
      expect(second.stdout).toBe('');
    } finally {
      holder.kill('SIGKILL');
      await new Promise((r) => holder.once('exit', r));
    }
    // The holder died without releasing: its lock is stale and the next process takes over.
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(true);
    const third = companyCreate(['--name', 'Third', '--email', 'third@x.test'], { DATA_DIR: dir });
    expect(third.stderr).toBe('');
    expect(third.status).toBe(0);
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
  });
});
