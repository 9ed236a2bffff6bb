import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../lib/testing/servers';

const root = path.resolve(__dirname, '..');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/**
 * `npm start` with `env` until Next.js is starting (the bundled Stripe server, when started,
 * comes up before it); its output so far.
 */
async function startOnce(env: Record<string, string>): Promise<string> {
  if (!fs.existsSync(path.join(root, '.next/BUILD_ID'))) throw new Error('run `next build` first (npm test builds before the server tests)');
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-start-'));
  dirs.push(dataDir);
  const base: NodeJS.ProcessEnv = { ...process.env };
  delete base.STRIPE_API_URL;
  delete (base as Record<string, string | undefined>).NODE_ENV;
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: root,
    env: { ...base, PORT: String(port), DATA_DIR: dataDir, ADMIN_TOKEN: 'start-test-admin-token', APP_SECRET: '', ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  try {
    for (let i = 0; !out.includes('Next.js'); i++) {
      if (child.exitCode !== null) throw new Error(`npm start exited early:\n${out}`);
      if (i > 1200) throw new Error(`npm start did not start Next.js:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return out;
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  }
}

// Not about the database: runs once, with the embedded one. That it does start the bundled
// server for a local try-out, the browser tests show (they pay through it).
describe('npm start and the bundled local Stripe server', () => {
  it('does not start it in production, and says why and what to set instead', async () => {
    const out = await startOnce({ NODE_ENV: 'production' });
    expect(out).toContain('not starting the bundled local Stripe server, because NODE_ENV is production');
    expect(out).toContain('set STRIPE_API_URL');
    expect(out).not.toContain('local stripe listening');
  });

  it('reports a server killed by a signal as a failure (exit code 128 + the signal), not as a success', async () => {
    const port = await freePort();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-start-'));
    dirs.push(dataDir);
    const child = spawn(process.execPath, ['scripts/start.mjs'], {
      cwd: root,
      env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, ADMIN_TOKEN: 'start-test-admin-token', APP_SECRET: '', NODE_ENV: 'production', STRIPE_API_URL: '' } as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      for (let i = 0; !(await fetch(`http://127.0.0.1:${port}/livez`).then((r) => r.ok, () => false)); i++) {
        if (child.exitCode !== null || i > 1200) throw new Error(`npm start did not start the server:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      // The server npm start runs (scripts/serve.mjs, its only child here: no local Stripe server
      // in production), ended as the kernel's out-of-memory killer would.
      const servers = spawnSync('ps', ['--ppid', String(child.pid), '-o', 'pid=']).stdout.toString().trim().split(/\s+/).filter(Boolean);
      expect(servers, out).toHaveLength(1);
      process.kill(Number(servers[0]), 'SIGKILL');
      expect(await exited).toBe(137);
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    }
  }, 120_000);

  it('does not start it when a live key is configured', async () => {
    const out = await startOnce({ STRIPE_SECRET_KEY: 'rk_live_configured' });
    expect(out).toContain('not starting the bundled local Stripe server, because STRIPE_SECRET_KEY holds a live Stripe key');
    expect(out).not.toContain('rk_live_configured');
    expect(out).not.toContain('local stripe listening');
  });
});
