import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isStopping } from './probes';
import { shutdown } from './shutdown';
import { withSettings } from './env';

const get = (port: number) =>
  new Promise<{ status?: number; error?: string }>((resolve) => {
    // A new connection each time, as a load balancer that has not yet seen the readiness change opens.
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode }));
    });
    req.on('error', (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
  });

describe('a stop with SHUTDOWN_DELAY_MS', () => {
  it('loses readiness at once, goes on answering new connections for the delay, then drains and resolves 0', async () => {
    const server = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;

    const started = Date.now();
    const done = withSettings({ SHUTDOWN_DELAY_MS: '600', SHUTDOWN_TIMEOUT_MS: '5000' }, () => shutdown({ servers: [server] }));
    expect(isStopping()).toBe(true);
    expect(await get(port)).toEqual({ status: 200 });
    expect(server.listening).toBe(true);
    expect(await done).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(590);
    expect(server.listening).toBe(false);
    expect((await get(port)).error).toBe('ECONNREFUSED');
  });
});
