import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the proxy does with one request:
 * - pass: forwards it and relays the answer;
 * - cut-before: closes the connection without forwarding (nothing was done);
 * - cut-after: forwards it, lets the service finish, then closes the connection instead of
 *   relaying the answer (the work was done, the caller never heard);
 * - status: answers that status with a proxy's HTML page, before or after forwarding;
 * - hang: holds the request without forwarding until the caller gives up.
 */
export type Fault = 'pass' | 'cut-before' | 'cut-after' | 'hang' | { status: number; after: boolean };

export type Seen = {
  method: string;
  path: string;
  idempotencyKey: string | null;
  fault: Fault;
  /** The service's status, when the request reached it. */
  upstreamStatus: number | null;
  replayed: boolean;
};

/** A tiny HTTP proxy on 127.0.0.1 in front of `target`, failing requests as `decide` says. */
export async function startFaultyProxy(target: string) {
  const seen: Seen[] = [];
  let decide: (req: { method: string; path: string; n: number }) => Fault = () => 'pass';
  const upstream = new URL(target);
  const sockets = new Set<import('node:net').Socket>();

  const forward = (req: http.IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const out = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        },
      );
      out.on('error', reject);
      out.end(body);
    });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const path = req.url ?? '';
      const fault = decide({ method: req.method ?? '', path, n: seen.length });
      const entry: Seen = { method: req.method ?? '', path, idempotencyKey: (req.headers['idempotency-key'] as string | undefined) ?? null, fault, upstreamStatus: null, replayed: false };
      seen.push(entry);
      if (fault === 'hang') return;
      if (fault === 'cut-before') return req.socket.destroy();
      if (typeof fault === 'object' && !fault.after) return proxyPage(res, fault.status);
      try {
        const answer = await forward(req, body);
        entry.upstreamStatus = answer.status;
        entry.replayed = answer.headers['idempotent-replayed'] === 'true';
        if (fault === 'cut-after') return req.socket.destroy();
        if (typeof fault === 'object') return proxyPage(res, fault.status);
        const headers = { ...answer.headers };
        delete headers['transfer-encoding'];
        delete headers.connection;
        res.writeHead(answer.status, headers).end(answer.body);
      } catch {
        req.socket.destroy();
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    /** Sets how later requests are treated (n counts every request the proxy saw). */
    decide(fn: typeof decide) {
      decide = fn;
    },
    /** Fails the next requests matching `method` and `path` (a prefix) with `faults`, in order, then passes. */
    failNext(method: string, pathPrefix: string, faults: Fault[]) {
      const queue = [...faults];
      decide = (r) => (r.method === method && r.path.startsWith(pathPrefix) && queue.length ? queue.shift()! : 'pass');
    },
    /** What the proxy saw from index `from` on. */
    since(from: number) {
      return seen.slice(from);
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function proxyPage(res: http.ServerResponse, status: number) {
  res.writeHead(status, { 'content-type': 'text/html' }).end(`<html><body><h1>${status}</h1>The upstream is unavailable.</body></html>`);
}

export type FaultyProxy = Awaited<ReturnType<typeof startFaultyProxy>>;
