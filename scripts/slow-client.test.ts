import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_TEST_TIMEOUT, freePort, keepOutput } from '../lib/testing/servers';
import { migratedDataDir } from '../lib/testing/templates';

const root = path.resolve(__dirname, '..');
let dir = '';
let port = 0;
let stop: () => Promise<void> = async () => {};

/**
 * A client that sends `head` at once, then one byte of `trickle` every 200 ms, never finishing:
 * what the server answered (its status line, if any), and after how long it closed the connection.
 */
function trickle(head: string, rest: string): Promise<{ answer: string; closedAfterMs: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < rest.length && !socket.destroyed) socket.write(rest[sent++]);
    }, 200);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (d) => (answer += d));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer: answer.split('\r\n')[0], closedAfterMs: Date.now() - started });
    });
  });
}

describe.skipIf(process.env.TEST_DB !== 'embedded')('slow clients (scripts/serve.mjs)', () => {
  beforeAll(async () => {
    // A copy of the migrated template: the cut of slow clients is the subject, not a first start.
    dir = await migratedDataDir('slow-client-');
    port = await freePort();
    const child = spawn(process.execPath, ['scripts/serve.mjs'], {
      cwd: root,
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', DATA_DIR: dir, PORT: String(port), HOSTNAME: '127.0.0.1', WORKER: '0', ADMIN_TOKEN: 'slow-client-test-token', REQUEST_TIMEOUT_MS: '2000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    keepOutput(child, () => out);
    for (let i = 0; ; i++) {
      if (child.exitCode !== null || i > 600) throw new Error(`the server did not come up:\n${out}`);
      if (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    stop = () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
  }, SERVER_TEST_TIMEOUT);
  afterAll(async () => {
    await stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('cuts a request whose headers trickle in after REQUEST_TIMEOUT_MS, with 408', async () => {
    const { answer, closedAfterMs } = await trickle('POST /v1/companies HTTP/1.1\r\nHost: x\r\n', 'X-Slow: ' + 'a'.repeat(200));
    expect(answer).toBe('HTTP/1.1 408 Request Timeout');
    expect(closedAfterMs).toBeGreaterThanOrEqual(2000);
    expect(closedAfterMs).toBeLessThan(6000);
  }, 20_000);

  it('cuts a body that trickles in after REQUEST_TIMEOUT_MS, and serves the next client', async () => {
    const body = JSON.stringify({ name: 'Slow Co', email: 'slow@example.test' });
    const { closedAfterMs } = await trickle(`POST /v1/companies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body);
    expect(closedAfterMs).toBeGreaterThanOrEqual(2000);
    expect(closedAfterMs).toBeLessThan(6000);
    expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(200);
  }, 20_000);
});
