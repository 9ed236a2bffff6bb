import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

// A test that starts the built server and drives it end to end spends most of its time starting
// processes, which stretches several times over on a loaded machine; its limit is generous so
// that only a hang fails it.
export const SERVER_TEST_TIMEOUT = 180_000;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export type AppServer = { url: string; stop: () => Promise<void>; output: () => string };

/**
 * Keeps what a process started by a test wrote, once it has exited, in test-results/logs: `npm
 * test` searches every log line of the run for secrets afterwards (scripts/scan-test-logs.ts).
 */
export function keepOutput(child: ChildProcess, output: () => string): void {
  child.once('exit', () => {
    try {
      const dir = path.join(root, 'test-results/logs');
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `process-${process.pid}-${child.pid}.log`), output());
    } catch {
      /* a test's own temporary output: not worth failing it */
    }
  });
}

/** Starts the built application (`next start`) as a separate process; needs `next build` first. */
export async function startAppServer(env: Record<string, string>): Promise<AppServer> {
  if (!fs.existsSync(path.join(root, '.next/BUILD_ID'))) throw new Error('run `next build` first (npm test builds before the server tests)');
  const port = await freePort();
  let out = '';
  // Idle keep-alive connections kept well past the test client's own idle timeout (4 s), so the
  // server never closes one just as the client reuses it (a reset the client cannot retry).
  const child: ChildProcess = spawn(process.execPath, [path.join(root, 'node_modules/next/dist/bin/next'), 'start', '-p', String(port), '--keepAliveTimeout', '65000'], {
    cwd: root,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  keepOutput(child, () => out);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${out}`);
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    output: () => out,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
