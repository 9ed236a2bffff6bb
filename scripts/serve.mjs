// The production server: `node scripts/serve.mjs` in the image (beside the standalone build's
// server.js), and what `npm start` runs from the repository after `next build`.
// WEB_CONCURRENCY=n serves with n processes on one port (node:cluster; PostgreSQL only), each
// with its own database pool, and replaces a process that dies. Signals are the application's:
// each process drains its requests, stops its worker and closes its database (lib/shutdown.ts),
// and this primary exits once they all have. The primary gathers the processes' metrics for the
// one that serves GET /metrics (prom-client's AggregatorRegistry), and logs as they do: JSON lines.
import { randomBytes } from 'node:crypto';
import cluster from 'node:cluster';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// In the image the standalone build is the application directory itself.
const standaloneServer = path.join(root, 'server.js');
// A process that dies sooner than this after starting is replaced after a pause, not in a loop.
const QUICK_DEATH_MS = 5_000;
const RESTART_PAUSE_MS = 1_000;

/** A log line in the application's shape (lib/log.ts), for the few things the primary says. */
function logLine(level, msg, fields = {}) {
  const line = JSON.stringify({ level, time: new Date().toISOString(), pid: process.pid, ...fields, msg });
  (level === 'info' ? process.stdout : process.stderr).write(`${line}\n`);
}

/**
 * A module of the service's, in the image from its bundle in dist/, in the repository from the
 * sources. The build's bundle is used when it is at least as new as the source: loading the
 * TypeScript loader only to read it would keep ~40 MB in every serving process.
 */
async function loadModule(name, source) {
  const bundled = path.join(root, 'dist', `${name}.mjs`);
  const sourceFile = path.join(root, source);
  const fresh = fs.existsSync(bundled) && (!fs.existsSync(sourceFile) || fs.statSync(bundled).mtimeMs >= fs.statSync(sourceFile).mtimeMs);
  return fs.existsSync(standaloneServer) || fresh
    ? await import(pathToFileURL(bundled).href)
    : await (await import('tsx/esm/api')).tsImport(`../${source}`, import.meta.url);
}

/**
 * The configuration, checked against the service's schema (lib/env.ts) before anything starts.
 * A wrong value stops the start here, naming the variable, before any process is forked.
 */
async function loadConfiguration() {
  const schema = await loadModule('env', 'lib/env.ts');
  try {
    return schema.loadEnv();
  } catch (err) {
    if (err?.name !== 'ConfigError') throw err;
    logLine('fatal', `Cannot start: ${err.message}`);
    process.exit(2);
  }
}

function runPrimary(env, count) {
  if (!env.DATABASE_URL) {
    logLine(
      'fatal',
      `WEB_CONCURRENCY=${count} needs PostgreSQL (DATABASE_URL): the embedded database belongs to one process ` +
        '(it locks DATA_DIR). Unset WEB_CONCURRENCY, or set DATABASE_URL.',
    );
    process.exit(2);
  }
  // The serving processes run this file, also when it was imported by another (npm start's launcher).
  cluster.setupPrimary({ exec: fileURLToPath(import.meta.url) });
  const startedAt = new Map();
  let stopping = false;
  let failed = false;
  const fork = () => {
    if (stopping) return;
    const child = cluster.fork();
    startedAt.set(child.id, Date.now());
    child.once('online', () => logLine('info', `serving process ${child.process.pid} started`));
  };
  cluster.on('exit', (child, code, signal) => {
    const lived = Date.now() - (startedAt.get(child.id) ?? 0);
    startedAt.delete(child.id);
    if (stopping) {
      if (code !== 0) failed = true;
      // Counted here: node:cluster keeps a process in cluster.workers until it has also disconnected.
      if (startedAt.size === 0) process.exit(failed ? 1 : 0);
      return;
    }
    logLine('error', `serving process ${child.process.pid} ended (${signal ?? `exit code ${code}`}); starting another`);
    setTimeout(fork, lived < QUICK_DEATH_MS ? RESTART_PAUSE_MS : 0);
  });
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    // The processes that have not exited (cluster.workers also lists exited ones not yet disconnected).
    if (startedAt.size === 0) process.exit(0);
    for (const child of Object.values(cluster.workers ?? {})) if (startedAt.has(child.id)) child.process.kill(signal);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGTERM'));
  cluster.on('message', (child, message) => {
    if (message?.type !== 'billing:metrics-request') return;
    gatherMetrics().then(
      (text) => child.isConnected() && child.send({ type: 'billing:metrics', id: message.id, text }),
      (err) => child.isConnected() && child.send({ type: 'billing:metrics', id: message.id, error: String(err?.message ?? err) }),
    );
  });
  for (let i = 0; i < count; i++) fork();
}

let aggregator;
/**
 * Every serving process's metrics in one text: counters and histograms added up, the gauges read
 * from the database taken once (lib/metrics/registry.ts says how each one merges). prom-client is
 * loaded only here, when the first scrape asks.
 */
function gatherMetrics() {
  if (!aggregator) {
    const { AggregatorRegistry } = createRequire(import.meta.url)('prom-client');
    aggregator = new AggregatorRegistry();
  }
  return aggregator.clusterMetrics();
}

/**
 * The client's address as far as it can be vouched for, which the application reads as
 * X-Forwarded-For (lib/net/client-address.ts): the connection's peer, or with `proxies` reverse
 * proxies in front, each appending the address that connected to it, the entry the outermost one
 * wrote. Entries further left were written by the client and name whatever it likes.
 */
let warnedUnvouched = false;

function vouchedClient(req, proxies) {
  const peer = req.socket?.remoteAddress ?? '';
  const sent = req.headers['x-forwarded-for'];
  if (proxies === 0) {
    // Once: behind a proxy with TRUSTED_PROXIES unset, every client counts as the proxy's address.
    if (sent && !warnedUnvouched) {
      warnedUnvouched = true;
      logLine('warn', 'A request arrived with X-Forwarded-For while TRUSTED_PROXIES is 0, so per-address limits count the connection\'s peer. If reverse proxies are in front, set TRUSTED_PROXIES to their number; if clients connect directly, leave it at 0 (a client can send the header itself).');
    }
    return peer;
  }
  const chain = [...String(sent ?? '').split(','), peer].map((s) => s.trim()).filter(Boolean);
  return chain[Math.max(0, chain.length - 1 - proxies)] ?? '';
}

/** A hosted page's token (`/collect/<token>`, `/portal/<token>`) and query values taken out of a console line. */
function withoutTokens(value) {
  if (typeof value === 'string') {
    return value.replace(/(\/(?:v1\/)?(?:collect|portal)\/)[^/?#\s"'<>]+/g, '$1[token]').replace(/([?&][^=&#\s"'<>]+=)[^&#\s"'<>]*/g, '$1[value]');
  }
  if (value instanceof Error) {
    const copy = new Error(withoutTokens(value.message));
    copy.name = value.name;
    copy.stack = withoutTokens(value.stack ?? '');
    return copy;
  }
  return value;
}

/**
 * Until lib/boot.ts has finished (it sets `__billingBooted`), `/livez` answers 200 and `/readyz`
 * and `/health` answer 503 here, as the application would; every other request goes to `handler`,
 * which holds it until the start is done.
 */
function answerProbesWhileStarting(handler) {
  return function (req, res) {
    if (!globalThis.__billingBooted && req.method === 'GET') {
      const path = (req.url ?? '').split('?')[0];
      const live = path === '/livez';
      if (live || path === '/readyz' || path === '/health') {
        const requestId = `req_${randomBytes(12).toString('base64url')}`;
        const body = live
          ? { data: { status: 'ok' } }
          : { error: { type: 'service_unavailable', message: 'The service is starting: opening the database and applying migrations.', param: null, request_id: requestId } };
        res.writeHead(live ? 200 : 503, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'request-id': requestId });
        res.end(JSON.stringify(body));
        return;
      }
    }
    return handler.call(this, req, res);
  };
}

async function runServer(env) {
  const { trackConnections } = await loadModule('connections', 'lib/http/connections.ts');
  // Next.js' own handler would close the HTTP server and exit 143 right away, cutting off the
  // worker and the webhook sends under way; the application installs its stop sequence instead
  // (lib/boot.ts) and drains the servers recorded here.
  process.env.NEXT_MANUAL_SIG_HANDLE = 'true';
  const servers = (globalThis.__billingHttpServers ??= new Set());
  const createServer = http.createServer;
  http.createServer = function (...args) {
    // A client gets REQUEST_TIMEOUT_MS to send its whole request, headers included: one that
    // trickles them, or its body, is answered 408 and its connection closed, so slow uploads
    // cannot hold connections (and their memory) open for Node.js' default 5 minutes. Checked
    // a few times within that time (Node.js' default check runs every 30 s).
    const timeout = env.REQUEST_TIMEOUT_MS;
    const options = args[0] !== null && typeof args[0] === 'object' ? args.shift() : {};
    args.unshift({ ...options, requestTimeout: timeout, headersTimeout: timeout, connectionsCheckingInterval: Math.max(100, Math.min(5000, Math.floor(timeout / 4))) });
    // Next.js serves nothing until the application's start (lib/boot.ts: opening the database,
    // migrations, a DATA_DIR lock to wait for) is done; the probes answer meanwhile.
    const last = args.length - 1;
    if (typeof args[last] === 'function') args[last] = answerProbesWhileStarting(args[last]);
    const server = createServer.apply(this, args);
    servers.add(server);
    // From its first connection: a stop waits for a connection whose request is on its way and
    // closes only those idle between requests (lib/shutdown.ts).
    trackConnections(server);
    // Before Next.js' own listener: the application reads the client from this header.
    server.prependListener('request', (req) => {
      req.headers['x-forwarded-for'] = vouchedClient(req, env.TRUSTED_PROXIES);
    });
    return server;
  };
  // Next.js writes some lines itself through the console, among them `Failed to handle request
  // for <url>` when a request fails outside the application: a hosted page's URL holds its
  // bearer token, so such lines go out with it replaced (as in traces, lib/tracing-redact.ts).
  for (const level of ['error', 'warn', 'log', 'info']) {
    const write = console[level].bind(console);
    console[level] = (...args) => write(...args.map(withoutTokens));
  }
  // Until the application has installed its stop sequence, a signal just ends the process.
  const early = () => {
    if (!globalThis.__billingSignals) process.exit(0);
  };
  process.on('SIGTERM', early);
  process.on('SIGINT', early);

  if (fs.existsSync(standaloneServer)) {
    await import(pathToFileURL(standaloneServer).href);
    return;
  }
  // From the repository: the same server over .next, with the configuration the build recorded
  // (what the standalone server.js does).
  const require = createRequire(import.meta.url);
  const manifest = path.join(root, '.next', 'required-server-files.json');
  if (!fs.existsSync(manifest)) {
    logLine('fatal', 'No build found: run `npm run build` first (or `npm start`, which builds when needed).');
    process.exit(2);
  }
  process.env.NODE_ENV = 'production';
  process.env.__NEXT_PRIVATE_STANDALONE_CONFIG = JSON.stringify(JSON.parse(fs.readFileSync(manifest, 'utf8')).config);
  require('next');
  const { startServer } = require('next/dist/server/lib/start-server');
  await startServer({
    dir: root,
    isDev: false,
    // As `next start`: every interface unless HOSTNAME says otherwise.
    hostname: env.HOSTNAME,
    port: env.PORT,
    allowRetry: false,
    keepAliveTimeout: env.KEEP_ALIVE_TIMEOUT,
  });
}

const env = await loadConfiguration();
// NODE_ENV as it was set, before this file (and the standalone server.js) set it to production for
// Next.js: the application's own check of the configuration (lib/boot.ts) reads this one.
globalThis.__billingStartedNodeEnv = env.NODE_ENV ?? null;
if (cluster.isPrimary && env.WEB_CONCURRENCY > 1) runPrimary(env, env.WEB_CONCURRENCY);
else
  await runServer(env).catch((err) => {
    logLine('fatal', `Cannot start: ${err?.message ?? err}`, { err: { type: err?.name, message: String(err?.message ?? err), stack: err?.stack } });
    process.exit(1);
  });
