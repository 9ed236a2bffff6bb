import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DRAIN_MS, postWebhook } from './send';

describe('an answer whose body trickles in', () => {
  let server: http.Server;
  let url: string;
  const closed: number[] = [];
  let answeredAt = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.socket.once('close', () => closed.push(Date.now()));
      // The status at once, then a byte a second for a minute.
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '60' });
      answeredAt = Date.now();
      const drip = setInterval(() => res.write('x'), 1000);
      res.on('close', () => clearInterval(drip));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('is the status at once, and its socket is given up after MAX_DRAIN_MS instead of held for the whole timeout', async () => {
    const result = await postWebhook(url, { 'content-type': 'application/json' }, '{}', 30_000);
    expect(result).toEqual({ status: 200, error: null });
    for (let i = 0; i < 50 && closed.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(closed).toHaveLength(1);
    const held = closed[0] - answeredAt;
    expect(held).toBeGreaterThanOrEqual(MAX_DRAIN_MS - 50);
    expect(held).toBeLessThan(MAX_DRAIN_MS + 1_500);
  });
});
