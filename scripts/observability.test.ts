import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_TEST_TIMEOUT, freePort, keepOutput, startAppServer, type AppServer } from '../lib/testing/servers';
import { migratedDataDir } from '../lib/testing/templates';
import { migratedPostgresDatabase, waitFor, type Proc } from '../lib/testing/image';
import { sample } from '../lib/testing/prometheus';

// Against the built server: what Next.js loads, the traces it sends, the metrics a real scrape
// shows (and the dashboard queries), and a cluster's metrics gathered by its primary.
const root = path.resolve(__dirname, '..');
const TOKEN = 'scrape-token-0123456789abcdef';
const ADMIN = 'admin-token-observability-0123';

/**
 * Waits for what a server sends on its own time (spans batched, then exported) to arrive: up to a
 * minute, since a server just started on a loaded machine can take seconds for its first export.
 * The checks that follow still fail if it never came.
 */
async function untilSeen(arrived: () => boolean, ms = 60_000): Promise<void> {
  for (const end = Date.now() + ms; !arrived() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 100));
}

function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A preload that writes every CommonJS module the process loaded to `file` when it exits. */
function modulesPreload(dir: string): string {
  const preload = path.join(dir, 'loaded-modules.cjs');
  fs.writeFileSync(
    preload,
    `process.on('exit', () => require('node:fs').writeFileSync(process.env.LOADED_MODULES_FILE, JSON.stringify(Object.keys(require.cache))));\n`,
  );
  return preload;
}

/** A tiny OTLP/HTTP receiver: keeps every span posted to /v1/traces (JSON encoding). */
async function startReceiver() {
  const spans: { name: string; traceId: string; attributes: Record<string, unknown>; service: unknown }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && /json/.test(req.headers['content-type'] ?? '')) {
        const doc = JSON.parse(body) as { resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: { name: string; traceId: string; attributes?: { key: string; value: Record<string, unknown> }[] }[] }[] }[] };
        for (const rs of doc.resourceSpans ?? []) {
          const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({ name: s.name, traceId: s.traceId, service, attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]])) });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function loadedOpenTelemetry(file: string): string[] {
  const loaded = JSON.parse(fs.readFileSync(file, 'utf8')) as string[];
  // Next.js loads the OpenTelemetry API itself in every process (its own spans go through it,
  // and do nothing without an SDK), as does prom-client: the API alone is a no-op facade.
  return loaded.filter((m) => /[\\/]@opentelemetry[\\/]/.test(m) && !/[\\/]@opentelemetry[\\/]api[\\/]/.test(m));
}

describe.skipIf(process.env.TEST_DB === 'postgres')('tracing', () => {
  it('loads no OpenTelemetry SDK without OTEL_EXPORTER_OTLP_ENDPOINT, and with it sends a span for a request, in the caller’s trace', { timeout: SERVER_TEST_TIMEOUT }, async () => {
    const dir = tempDir('otel-');
    const preload = modulesPreload(dir);
    const receiver = await startReceiver();
    const servers: AppServer[] = [];
    try {
      const base = { ADMIN_TOKEN: ADMIN, STRIPE_API_URL: '', NODE_OPTIONS: `--require ${preload}` };
      const off = await startAppServer({ ...base, DATA_DIR: await migratedDataDir('otel-off-'), LOADED_MODULES_FILE: path.join(dir, 'off.json') });
      servers.push(off);
      const offAnswer = await fetch(`${off.url}/v1/openapi.json`);
      expect(offAnswer.status).toBe(200);
      // Read to its end: a body left unread keeps the connection busy, and the server's stop waits for it.
      await offAnswer.arrayBuffer();
      await off.stop();

      const on = await startAppServer({
        ...base,
        DATA_DIR: await migratedDataDir('otel-on-'),
        LOADED_MODULES_FILE: path.join(dir, 'on.json'),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '100',
      });
      servers.push(on);
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const res = await fetch(`${on.url}/v1/openapi.json`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      // The request's own span ends after the spans inside it, so it may come in a later export.
      await untilSeen(() => receiver.spans.some((s) => s.traceId === traceId && s.name === 'GET /v1/openapi.json'));
      const spans = receiver.spans.filter((s) => s.traceId === traceId);
      expect(spans.map((s) => s.name)).toContain('GET /v1/openapi.json');
      expect(spans.every((s) => s.service === 'billing')).toBe(true);
      expect(spans.find((s) => s.name === 'GET /v1/openapi.json')?.attributes['http.status_code']).toBe(200);
      // A hosted page's token (a bearer secret) and query values reach no span; the request is still traced.
      const token = 'pt_secret-token-in-the-path-0123456789abcdef';
      const portalTrace = '5bf92f3577b34da6a3ce929d0e0e4737';
      const portal = await fetch(`${on.url}/portal/${token}?from=mail-secret`, { headers: { traceparent: `00-${portalTrace}-00f067aa0ba902b7-01` } });
      expect(portal.status).toBe(200); // the page saying the link is not valid
      await portal.arrayBuffer();
      await untilSeen(() => receiver.spans.some((s) => s.traceId === portalTrace && s.attributes['http.target']));
      const portalSpans = receiver.spans.filter((s) => s.traceId === portalTrace);
      expect(portalSpans.map((s) => s.attributes['http.target'])).toContain('/portal/[token]?from');
      expect(JSON.stringify(portalSpans)).not.toMatch(/secret-token|mail-secret/);
      await on.stop();

      expect(loadedOpenTelemetry(path.join(dir, 'off.json')), 'OpenTelemetry modules loaded without the variable').toEqual([]);
      // The same check sees the SDK when it is loaded: it is not blind.
      const withSdk = loadedOpenTelemetry(path.join(dir, 'on.json'));
      expect(withSdk.some((m) => /sdk-trace/.test(m))).toBe(true);
      expect(withSdk.some((m) => /exporter-trace-otlp-http/.test(m))).toBe(true);
    } finally {
      for (const s of servers) await s.stop();
      await receiver.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an endpoint that is not an http(s) URL at start, naming the variable', async () => {
    const dir = tempDir('otel-bad-');
    try {
      await expect(startAppServer({ DATA_DIR: dir, ADMIN_TOKEN: ADMIN, STRIPE_API_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).rejects.toThrow(
        /OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Every metric name a Grafana dashboard queries. */
function dashboardMetrics(file: string): string[] {
  const dashboard = JSON.parse(fs.readFileSync(file, 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
  const names = new Set<string>();
  for (const panel of dashboard.panels) {
    for (const target of panel.targets ?? []) {
      // Metric names: identifiers not followed by "(" (functions) and not inside {...} or by/without (...).
      const expr = target.expr.replace(/\{[^}]*\}/g, '').replace(/\b(by|without)\s*\([^)]*\)/g, '').replace(/\[[^\]]*\]/g, '');
      for (const m of expr.matchAll(/\b([a-z_][a-z0-9_]*)\b(?!\s*\()/g)) if (/_/.test(m[1]) && !/^(le|job|instance)$/.test(m[1])) names.add(m[1]);
    }
  }
  return [...names].sort();
}

/** The families a scrape declares (`# TYPE`), and so the sample names each one may show. */
function scrapedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(m[1]);
    if (m[2] === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(m[1] + suffix);
  }
  return names;
}

describe.skipIf(process.env.TEST_DB === 'postgres')('a real scrape', () => {
  let server: AppServer;
  let dir: string;
  beforeAll(async () => {
    dir = await migratedDataDir('scrape-');
    server = await startAppServer({ DATA_DIR: dir, ADMIN_TOKEN: ADMIN, STRIPE_API_URL: '', METRICS_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('holds every metric the Grafana dashboard in deploy/ queries', async () => {
    // Each answer read to its end: one left unread keeps its connection busy, and the stop after the tests waits for it.
    await (await fetch(`${server.url}/v1/companies`, { headers: { authorization: `Bearer ${ADMIN}` } })).arrayBuffer();
    await (await fetch(`${server.url}/companies`, { headers: { authorization: `Bearer ${ADMIN}` } })).arrayBuffer();
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const names = scrapedNames(await res.text());
    const queried = dashboardMetrics(path.join(root, 'deploy/grafana-dashboard.json'));
    expect(queried.length).toBeGreaterThan(15);
    expect(queried.filter((n) => !names.has(n)), 'queried by the dashboard, absent from /metrics').toEqual([]);
    // The check is not blind: a name the service does not have is caught.
    expect(names.has('billing_no_such_metric')).toBe(false);
  });

  it('counts requests by route pattern and status, and answers 404 without the token configured', async () => {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = await res.text();
    // Asked with and without the /v1 prefix: one route.
    expect(sample(text, 'billing_http_requests_total', { method: 'GET', route: '/v1/companies', status: '401' })).toBe(2);
    const unauthorized = await fetch(`${server.url}/metrics`);
    expect(unauthorized.status).toBe(401);
    await unauthorized.arrayBuffer();
    const logs = server.output();
    expect(logs).toMatch(/"route":"\/v1\/companies","status":401,"duration_ms":[\d.]+,"msg":"GET \/v1\/companies 401"/);
  });
});

describe.skipIf(process.env.TEST_DB !== 'postgres')('several processes', () => {
  const procs: Proc[] = [];
  afterAll(async () => {
    for (const p of procs) {
      p.signal('SIGTERM');
      await p.exited;
    }
  });

  function start(args: string[], env: Record<string, string>): Proc {
    const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    keepOutput(child, () => out);
    const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    const proc: Proc = { child, output: () => out, exited, signal: (s) => child.exitCode === null && child.signalCode === null && child.kill(s) };
    procs.push(proc);
    return proc;
  }

  it('with WEB_CONCURRENCY=2, one scrape shows the requests both processes answered', async () => {
    const url = await migratedPostgresDatabase();
    const port = await freePort();
    const server = start(['scripts/serve.mjs'], { DATABASE_URL: url, WEB_CONCURRENCY: '2', PORT: String(port), HOSTNAME: '127.0.0.1', METRICS_TOKEN: TOKEN, WORKER: '0', ADMIN_TOKEN: ADMIN });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(`${base}/readyz`, server);
    // Both processes up: each logs its start.
    for (let i = 0; i < 300 && (server.output().match(/serving process \d+ started/g) ?? []).length < 2; i++) await new Promise((r) => setTimeout(r, 100));
    const N = 24;
    for (let i = 0; i < N; i++) {
      // A new connection each time: the primary hands connections to its processes in turn.
      const res = await fetch(`${base}/v1/openapi.json`, { headers: { connection: 'close' } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const pids = new Set([...server.output().matchAll(/"pid":(\d+)[^\n]*"route":"\/v1\/openapi\.json"/g)].map((m) => m[1]));
    expect(pids.size, server.output()).toBe(2);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}`, connection: 'close' } });
      expect(res.status).toBe(200);
      expect(sample(await res.text(), 'billing_http_requests_total', { method: 'GET', route: '/v1/openapi.json', status: '200' })).toBe(N);
    }

    // One process stops answering (stopped, as while it starts or hangs): a scrape the other one
    // answers is 503, never that process's own counts, which Prometheus would read as a reset.
    const [stopped] = [...pids].map(Number);
    process.kill(stopped, 'SIGSTOP');
    try {
      const scrapes = await Promise.all(
        Array.from({ length: 4 }, async () => {
          try {
            const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}`, connection: 'close' }, signal: AbortSignal.timeout(15_000) });
            return { status: res.status, text: await res.text() };
          } catch {
            return null; // handed to the stopped process
          }
        }),
      );
      const answered = scrapes.filter((x) => x !== null);
      expect(answered.length).toBeGreaterThan(0);
      for (const a of answered) {
        expect(a.status, a.text.slice(0, 300)).toBe(503);
        expect(JSON.parse(a.text).error).toMatchObject({ type: 'service_unavailable', message: expect.stringMatching(/could not be gathered/) });
      }
    } finally {
      process.kill(stopped, 'SIGCONT');
    }
  }, 90_000);

  it('the worker process serves /metrics on WORKER_HEALTH_PORT, with its task runs', async () => {
    const url = await migratedPostgresDatabase();
    const port = await freePort();
    const worker = start(['dist/worker.mjs'], { DATABASE_URL: url, WORKER_HEALTH_PORT: String(port), METRICS_TOKEN: TOKEN, WORKER_INTERVAL_MS: '100' });
    await waitFor(`http://127.0.0.1:${port}/livez`, worker);
    let text = '';
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      text = await res.text();
      if ((sample(text, 'billing_worker_task_runs_total', { task: 'webhook-deliveries', outcome: 'ok' }) ?? 0) > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(sample(text, 'billing_worker_task_runs_total', { task: 'jobs', outcome: 'ok' })).toBeGreaterThan(0);
    expect(sample(text, 'billing_worker_lag_seconds', { task: 'jobs' })).toBe(0);
    expect(sample(text, 'billing_db_pool_max')).toBe(10);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
    expect(worker.output()).toMatch(/^\{"level":"info".*"msg":"worker running \(pid \d+\)"\}$/m);
  });
});
