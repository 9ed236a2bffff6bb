import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_TEST_TIMEOUT, freePort, keepOutput } from '../lib/testing/servers';
import { migratedDataDir } from '../lib/testing/templates';

const root = path.resolve(__dirname, '..');
// A copy of the migrated template: the address a limit counts is the subject, not a first start.
let dir = '';
beforeAll(async () => {
  dir = await migratedDataDir('client-address-');
});
afterAll(() => dir && fs.rmSync(dir, { recursive: true, force: true }));

/** The production server (scripts/serve.mjs) on the embedded database, two public submits a minute per address. */
async function serve(env: Record<string, string>) {
  const port = await freePort();
  const child = spawn(process.execPath, ['scripts/serve.mjs'], {
    cwd: root,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', DATA_DIR: dir, PORT: String(port), HOSTNAME: '127.0.0.1', WORKER: '0', ADMIN_TOKEN: 'client-address-test', PUBLIC_RATE_LIMIT_PER_MINUTE: '2', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  keepOutput(child, () => out);
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null || i > 600) throw new Error(`the server did not come up:\n${out}`);
    if (await fetch(`${base}/readyz`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  /** A collector submit on a link that does not exist: 404, or 429 once the address is over its limit. */
  const submit = async (forwarded?: string) => {
    const res = await fetch(`${base}/collect/not-a-link/submit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(forwarded && { 'x-forwarded-for': forwarded }) },
      body: JSON.stringify({ token: 'tok_visa' }),
    });
    await res.arrayBuffer();
    return res.status;
  };
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return { submit, stop, output: () => out };
}

describe('the client address of per-address limits (scripts/serve.mjs)', () => {
  it(
    'is the connection itself unless TRUSTED_PROXIES says how many proxies append to X-Forwarded-For',
    async () => {
      const direct = await serve({});
      try {
        // Served directly, a client that writes X-Forwarded-For does not become someone else.
        expect(await direct.submit('192.0.2.1')).toBe(404);
        expect(await direct.submit('192.0.2.2')).toBe(404);
        expect(await direct.submit('192.0.2.3')).toBe(429);
        expect(await direct.submit()).toBe(429);
        // The operator is told once that a proxy seems to be in front.
        expect(direct.output().match(/If reverse proxies are in front, set TRUSTED_PROXIES to their number/g)).toHaveLength(1);
      } finally {
        await direct.stop();
      }

      const proxied = await serve({ TRUSTED_PROXIES: '1' });
      try {
        // Behind one proxy: the entry it appended names the client...
        expect(await proxied.submit('192.0.2.1')).toBe(404);
        expect(await proxied.submit('192.0.2.1')).toBe(404);
        // ...and what the client wrote to its left does not change who it is.
        expect(await proxied.submit('198.51.100.7, 192.0.2.1')).toBe(429);
        expect(await proxied.submit('192.0.2.2')).toBe(404);
        // A request without the header is the proxy's own (the peer), counted apart.
        expect(await proxied.submit()).toBe(404);
        expect(proxied.output()).not.toContain('TRUSTED_PROXIES is 0');
      } finally {
        await proxied.stop();
      }
    },
    SERVER_TEST_TIMEOUT,
  );
});
