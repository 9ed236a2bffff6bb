import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isStopping } from './probes';
import { drainServer, shutdown } from './shutdown';

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
