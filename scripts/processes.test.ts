import fs from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleImage, migratedPostgresDatabase, startServer, stop, waitFor, type Proc } from '../lib/testing/image';

const onPostgres = process.env.TEST_DB === 'postgres';
const ADMIN = 'processes-admin-token';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A GET on a connection of its own (the primary hands each new connection to the next process). */
function getStatus(url: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

/** The serving processes a WEB_CONCURRENCY primary reported starting, in order. */
const startedPids = (output: string) => [...output.matchAll(/serving process (\d+) started/g)].map((m) => Number(m[1]));

async function until(what: string, ok: () => boolean, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!onPostgres)('several processes on one PostgreSQL (the image)', () => {
  let dir: string;
  let databaseUrl: string;
  const procs: Proc[] = [];
  beforeAll(async () => {
    dir = assembleImage();
    // Already migrated (the image's migration command is scripts/image.test.ts's subject).
    databaseUrl = await migratedPostgresDatabase();
  });
  afterAll(() => {
    for (const p of procs) p.signal('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('WEB_CONCURRENCY=2 serves from two processes on one port, and replaces one killed with SIGKILL while the port keeps answering', async () => {
    // SHUTDOWN_DELAY_MS 0: the image's 5 s of answering after SIGTERM is scripts/image.test.ts's subject, not this one's.
    const server = await startServer(dir, { DATABASE_URL: databaseUrl, MIGRATE: '0', WORKER: '0', APP_SECRET: 'processes-test-secret-of-at-least-32-bytes-0123456789', WEB_CONCURRENCY: '2', SHUTDOWN_DELAY_MS: '0' });
    procs.push(server);
    await until('two serving processes', () => startedPids(server.output()).length === 2);
    const [victim, survivor] = startedPids(server.output());
    // Both processes have started (round robin sends every other connection to each).
    for (let ok = 0; ok < 6; ) {
      ok = (await getStatus(`${server.url}/readyz`, 30_000)) === 200 ? ok + 1 : 0;
    }

    let killedAt = 0;
    const answers: { at: number; end: number; ok: boolean }[] = [];
    let polling = true;
    // Several clients at once: a connection the primary had just handed to the killed process is
    // lost with it (its client waits out its timeout) and must not hide what the others see.
    const pollers = Array.from({ length: 4 }, async () => {
      while (polling) {
        const at = Date.now();
        const ok = (await getStatus(`${server.url}/livez`, 3_000)) === 200;
        answers.push({ at, end: Date.now(), ok });
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    await new Promise((r) => setTimeout(r, 300));
    killedAt = Date.now();
    process.kill(victim, 'SIGKILL');
    await until('a new serving process', () => startedPids(server.output()).length === 3);
    const replacement = startedPids(server.output())[2];
    await new Promise((r) => setTimeout(r, 1_500));
    polling = false;
    await Promise.all(pollers);

    expect(isAlive(victim), 'the killed process').toBe(false);
    expect(isAlive(survivor), `the other process\n${server.output()}`).toBe(true);
    expect(isAlive(replacement), `the new process\n${server.output()}`).toBe(true);
    expect(replacement).not.toBe(victim);
    expect(server.output()).toContain(`serving process ${victim} ended (SIGKILL); starting another`);
    // The port answered all along: before the kill, and from the moment the primary saw it (what
    // was on its way to the killed process when it died is lost with it).
    expect(answers.filter((a) => a.end < killedAt && !a.ok), JSON.stringify(answers)).toEqual([]);
    const after = answers.filter((a) => a.at > killedAt + 500);
    expect(after.length).toBeGreaterThan(10);
    expect(after.filter((a) => !a.ok)).toEqual([]);
    await waitFor(`${server.url}/readyz`, server);

    expect(await stop(server)).toBe(0);
    expect(isAlive(survivor), 'the other process, after the stop').toBe(false);
    expect(isAlive(replacement), 'the new process, after the stop').toBe(false);
  });

  it('with the test clock, a process started after the shared clock moved serves its first request on the shared time', async () => {
    const env = { DATABASE_URL: databaseUrl, MIGRATE: '0', APP_SECRET: 'processes-test-secret-of-at-least-32-bytes-0123456789', ADMIN_TOKEN: ADMIN, BILLING_TEST_CLOCK: '1', ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1', SHUTDOWN_DELAY_MS: '0' };
    const first = await startServer(dir, env);
    procs.push(first);
    const admin = async (base: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return (await res.json()) as any;
    };
    const advanced = await admin(first.url, 'POST', '/v1/test_clock/advance', { seconds: 40 * 86400 });
    const shared = advanced.data.now as string;
    expect(new Date(shared).getTime() - Date.now()).toBeGreaterThan(39 * 86400_000);

    // The second process has no worker (whose tick would also read the clock): only its start can.
    const second = await startServer(dir, { ...env, WORKER: '0' });
    procs.push(second);
    const company = await admin(second.url, 'POST', '/v1/companies', { name: 'Late Co', email: 'late@clock.test' });
    expect(company.data.created_at).toBe(shared);

    expect(await stop(second)).toBe(0);
    expect(await stop(first)).toBe(0);
  });
});
