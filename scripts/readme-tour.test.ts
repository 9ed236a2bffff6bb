import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAppServer, type AppServer } from '../lib/testing/servers';
import { startLocalStripe } from '../lib/processor/local-stripe/server';

const root = path.resolve(__dirname, '..');

/** The bash blocks of the README's tour, in order, exactly as a reader would paste them. */
export function tourBlocks(readme: string): string[] {
  const start = readme.indexOf('<!-- tour:start -->');
  const end = readme.indexOf('<!-- tour:end -->');
  const section = readme.slice(start, end);
  return [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]);
}

// The tour runs once, against the embedded database (the quick start's own setup).
describe.skipIf(process.env.TEST_DB === 'postgres')('the README tour', () => {
  let server: AppServer | undefined;
  let stripe: { close: () => Promise<void> } | undefined;
  afterAll(async () => {
    await server?.stop();
    await stripe?.close();
  });

  it('runs every command of the five-minute tour against a started server', async () => {
    const local = await startLocalStripe({ port: 0 });
    stripe = local;
    server = await startAppServer({
      DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'tour-')),
      ADMIN_TOKEN: 'dev-admin-token',
      // As the tour starts the service: its webhook receiver listens on 127.0.0.1.
      WEBHOOK_ALLOW_PRIVATE: '1',
      STRIPE_API_URL: local.url,
      APP_SECRET: '',
    });
    const blocks = tourBlocks(fs.readFileSync(path.join(root, 'README.md'), 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    // Asynchronous on purpose: the local Stripe server answers from this process's event loop.
    const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('bash', ['-euo', 'pipefail', '-c', blocks.join('\n')], { cwd: root, env: { ...process.env, BASE: server!.url, ADMIN_TOKEN: 'dev-admin-token' } });
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
    expect(lines[lines.length - 2]).toBe('2000');
  });
});
