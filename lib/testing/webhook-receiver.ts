import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a test receiver saw: one HTTP request. */
export type Received = { method: string; path: string; headers: Record<string, string>; body: string; json: any; answered: boolean; at: number; answeredAt: number | null };

/**
 * How to answer the n-th request (0-based): a status (and headers), after `delayMs` if given, or
 * `hang` (never answer until released).
 */
export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number } | 'hang';

/**
 * A real HTTP server on 127.0.0.1 (port 0) that records every request: the tests send
 * webhooks over loopback, never through a fetch mock.
 */
export async function startReceiver(answer: (n: number, req: Received) => Answer = () => ({ status: 200 }), port = 0) {
  const requests: Received[] = [];
  const hanging: (() => void)[] = [];
  let behaviour = answer;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {
        /* not JSON */
      }
      const entry: Received = { method: req.method ?? '', path: req.url ?? '', headers, body, json, answered: false, at: Date.now(), answeredAt: null };
      const n = requests.length;
      requests.push(entry);
      const a = behaviour(n, entry);
      const reply = (status: number, extra: Record<string, string> = {}) => {
        if (res.destroyed) return;
        entry.answered = true;
        entry.answeredAt = Date.now();
        res.writeHead(status, { 'content-type': 'text/plain', ...extra });
        res.end('ok');
      };
      if (a === 'hang') hanging.push(() => reply(200));
      else if (a.delayMs) setTimeout(() => reply(a.status, a.headers), a.delayMs);
      else reply(a.status, a.headers);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    requests,
    /** Changes how later requests are answered. */
    answer(fn: (n: number, req: Received) => Answer) {
      behaviour = fn;
    },
    /** Answers 200 to every request left hanging so far. */
    release() {
      for (const r of hanging.splice(0)) r();
    },
    /** Waits until at least `n` requests arrived (real time; generous, for a machine under load). */
    async waitFor(n: number, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      while (requests.length < n) {
        if (Date.now() > until) throw new Error(`receiver got ${requests.length} requests, expected ${n}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return requests;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
