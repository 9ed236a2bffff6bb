import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isStopping } from './probes';
import { drainServer, shutdown } from './shutdown';
import { fork } from 'node:child_process';
import path from 'node:path';
import { trackConnections } from './http/connections';

/** A server whose requests take `ms`, and a keep-alive client for it. */
async function slowServer(ms: number) {
  const seen = new Map<string, () => void>();
  const arrived = new Map<string, Promise<void>>();
  /** Resolves once the server has the request for `path` (a request still on the wire is not under way yet). */
  const received = (path: string) => {
    if (!arrived.has(path)) arrived.set(path, new Promise<void>((resolve) => seen.set(path, resolve)));
    return arrived.get(path)!;
  };
  const server = http.createServer((req, res) => {
    received(req.url!);
    seen.get(req.url!)!();
    setTimeout(() => res.end(req.url), ms);
  });
  trackConnections(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const agent = new http.Agent({ keepAlive: true });
  const get = (path: string) =>
    new Promise<{ status?: number; body?: string; connection?: string; error?: string }>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode, body, connection: res.headers.connection }));
        res.on('error', (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
      });
      req.on('error', (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
    });
  return { server, get, agent, received };
}

describe('draining an HTTP server', () => {
  it('stops accepting, finishes the request under way on a keep-alive connection, and closes it after the answer', async () => {
    const { server, get, agent, received } = await slowServer(300);
    expect((await get('/warm')).status).toBe(200); // a keep-alive connection, idle now
    const inFlight = get('/slow');
    await received('/slow');
    const drained = drainServer(server, Date.now() + 5_000);
    while (server.listening) await new Promise((r) => setTimeout(r, 5));
    const refused = await get('/late');
    expect(refused.error).toBe('ECONNREFUSED');
    expect(await inFlight).toMatchObject({ status: 200, body: '/slow' });
    expect(await drained).toBe(true);
    expect(server.listening).toBe(false);
    agent.destroy();
  });

  it('cuts off what is still running at the deadline and says so', async () => {
    const { server, get, agent, received } = await slowServer(5_000);
    const inFlight = get('/stuck');
    await received('/stuck');
    const started = Date.now();
    expect(await drainServer(server, Date.now() + 200)).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect((await inFlight).error).toBe('ECONNRESET');
    agent.destroy();
  });
});

/**
 * Clients that open a connection for every request, as many load balancers and scripts do, send
 * through a SIGTERM: what each one gets. A server process of its own (lib/testing/drain-server.ts),
 * so the kernel's queue of connections it has not taken yet is real.
 */
async function throughDrain(opts: { track: boolean; clients: number }) {
  const child = fork(path.join(__dirname, 'testing/drain-server.ts'), { execArgv: ['--import', 'tsx'], env: { ...process.env, TRACK: opts.track ? '1' : '0' } });
  const { port } = await new Promise<{ port: number }>((resolve) => child.once('message', (m) => resolve(m as { port: number })));
  const seen: Record<string, number> = {};
  const one = () =>
    new Promise<string>((resolve) => {
      // A keep-alive request on a fresh connection: during the drain the server must say it closes it.
      const req = http.request({ host: '127.0.0.1', port, path: '/', method: 'POST', agent: false, headers: { connection: 'keep-alive', 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => {
          req.destroy();
          resolve(String(res.statusCode));
        });
        res.on('error', (err: NodeJS.ErrnoException) => resolve(`after the answer began: ${err.code ?? err.message}`));
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      req.end(JSON.stringify({ pad: 'x'.repeat(200) }));
    });
  const clients = Array.from({ length: opts.clients }, async () => {
    // Until the port refuses three times in a row: the process is gone.
    for (let refused = 0; refused < 3; ) {
      const outcome = await one();
      seen[outcome] = (seen[outcome] ?? 0) + 1;
      refused = outcome === 'ECONNREFUSED' ? refused + 1 : 0;
    }
  });
  await new Promise((r) => setTimeout(r, 400));
  const report = new Promise<{ drained: boolean; accepted: number; answered: number; late: number; lateClose: number }>((resolve) => child.once('message', (m) => resolve(m as never)));
  child.kill('SIGTERM');
  await Promise.all(clients);
  return { seen, server: await report };
}

describe('a drain under clients that open a connection per request', () => {
  it('answers every connection it accepted, each with Connection: close, and refuses the rest cleanly: no reset', async () => {
    for (let round = 0; round < 3; round++) {
      const { seen, server } = await throughDrain({ track: true, clients: 8 });
      expect(server.drained).toBe(true);
      // Every outcome is an answer or a refusal before connecting: nothing reset, nothing cut.
      expect(Object.keys(seen).sort(), JSON.stringify(seen)).toEqual(['200', 'ECONNREFUSED']);
      expect(seen['200']).toBe(server.accepted);
      expect(server.answered).toBe(server.accepted);
      // Requests answered during the drain (some were under way when it began) all said Connection: close.
      expect(server.late).toBeGreaterThan(0);
      expect(server.lateClose).toBe(server.late);
    }
  });

  it('(what it guards against) closing the listener the usual way resets connections the kernel had queued', async () => {
    let resets = 0;
    for (let round = 0; round < 3 && resets === 0; round++) resets += (await throughDrain({ track: false, clients: 8 })).seen.ECONNRESET ?? 0;
    expect(resets).toBeGreaterThan(0);
  });
});

describe('the stop sequence', () => {
  it('loses readiness at once, drains the servers, and resolves 0 once all is done', async () => {
    const { server, get, agent, received } = await slowServer(200);
    const inFlight = get('/last');
    await received('/last');
    expect(isStopping()).toBe(false);
    const done = shutdown({ servers: [server] });
    expect(isStopping()).toBe(true);
    expect(shutdown()).toBe(done);
    expect(await inFlight).toMatchObject({ status: 200, body: '/last' });
    expect(await done).toBe(0);
    expect(server.listening).toBe(false);
    agent.destroy();
  });
});
