// Ingest benchmark: starts the built server on each database and measures, in one run,
// batch ingest (batches of 1000 plan-priced events over 1000 accounts), single gated events
// at 32 connections (rate, p50, p99), and the same server's GET /health as the ceiling.
// Usage: npm run build && node bench/ingest/run.mjs [--db embedded|postgres|both] [--seconds 10]
//   --db pgbouncer: PostgreSQL behind PgBouncer in transaction mode, DATABASE_PREPARE=0;
//   --db postgres-unprepared: direct, DATABASE_PREPARE=0. --db takes a comma-separated list and
//   --rounds N runs the list N times in turn (alternating, so machine noise hits every mode);
//   --port P: PostgreSQL's port (default 55432), PgBouncer on P + 1.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { startPgBouncer, startPostgres, stopPgBouncer, stopPostgres } from '../../scripts/pg.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const { values } = parseArgs({ options: { db: { type: 'string', default: 'both' }, seconds: { type: 'string', default: '10' }, batches: { type: 'string', default: '60' }, rounds: { type: 'string', default: '1' }, port: { type: 'string', default: '55432' } } });
const PG_PORT = Number(values.port);
const SECONDS = Number(values.seconds);
const ADMIN = 'bench-admin-token';
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function request(base, method, pathname, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(base + pathname, { method, agent, headers: { ...(data && { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }), ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode, body: text ? JSON.parse(text) : null });
      });
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

async function startServer(env) {
  const port = 3900 + Math.floor(Math.random() * 50);
  const child = spawn(process.execPath, [...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []), path.join(root, 'node_modules/next/dist/bin/next'), 'start', '-p', String(port)], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1', ADMIN_TOKEN: ADMIN, RATE_LIMIT_PER_SECOND: '0', APP_SECRET: 'bench-secret-of-at-least-32-bytes-0123456789', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await request(base, 'GET', '/health')).status === 200) return { base, stop: () => new Promise((r) => { child.once('exit', r); child.kill('SIGTERM'); }) };
    } catch { /* starting */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

async function pool(n, fn) {
  await Promise.all(Array.from({ length: n }, (_, i) => fn(i)));
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function setup(base) {
  const reg = await request(base, 'POST', '/v1/companies', { name: 'Bench', email: 'bench@example.com' }, { authorization: `Bearer ${ADMIN}` });
  const { id, api_key } = reg.body.data;
  const auth = { authorization: `Basic ${Buffer.from(`${id}:${api_key}`).toString('base64')}` };
  const plan = await request(base, 'POST', `/v1/companies/${id}/plans`, {
    name: 'Bench', charge_amount: 0, balances: [{ amount: 100000000, denomination: 'credits' }],
    billing_rules: [{ type: 'call', amount: '0.01', denomination: 'credits' }],
  }, auth);
  const accounts = new Array(1000);
  let next = 0;
  await pool(8, async () => {
    while (next < accounts.length) {
      const slot = next++;
      const r = await request(base, 'POST', `/v1/companies/${id}/accounts`, { name: 'A', email: 'a@example.com', plan_id: plan.body.data.id }, auth);
      accounts[slot] = r.body.data.id;
    }
  });
  return { auth, accounts };
}

async function measure(base, { auth, accounts }) {
  // 1) batch ingest: batches of 1000 events over the 1000 accounts, 2 concurrent writers.
  const batches = Number(values.batches);
  let sent = 0;
  let t0 = performance.now();
  await pool(2, async () => {
    while (sent < batches) {
      sent++;
      const items = Array.from({ length: 1000 }, (_, i) => ({ account_id: accounts[(i * 7 + sent) % accounts.length], type: 'call' }));
      const r = await request(base, 'POST', '/v1/events', items, auth);
      if (r.status !== 200) throw new Error(`batch failed ${r.status} ${JSON.stringify(r.body)}`);
    }
  });
  const batchRate = (batches * 1000) / ((performance.now() - t0) / 1000);

  // 2) single gated events at 32 connections.
  const lat = [];
  let stop = false;
  t0 = performance.now();
  setTimeout(() => (stop = true), SECONDS * 1000);
  await pool(32, async (c) => {
    let n = 0;
    while (!stop) {
      const s = performance.now();
      const r = await request(base, 'POST', `/v1/accounts/${accounts[(c * 31 + n++) % accounts.length]}/events`, { type: 'call', gate_on_balance: true }, auth);
      if (r.status !== 200) throw new Error(`event failed ${r.status}`);
      lat.push(performance.now() - s);
    }
  });
  const singleRate = lat.length / ((performance.now() - t0) / 1000);
  lat.sort((a, b) => a - b);

  // 3) the framework's own ceiling on this machine: GET /health at 32 connections.
  let health = 0;
  stop = false;
  t0 = performance.now();
  setTimeout(() => (stop = true), SECONDS * 1000);
  await pool(32, async () => {
    while (!stop) {
      await request(base, 'GET', '/health');
      health++;
    }
  });
  const healthRate = health / ((performance.now() - t0) / 1000);
  return {
    batch_events_per_s: Math.round(batchRate),
    single_gated_per_s: Math.round(singleRate),
    single_p50_ms: +pct(lat, 50).toFixed(1),
    single_p99_ms: +pct(lat, 99).toFixed(1),
    health_per_s: Math.round(healthRate),
    single_vs_health: +(singleRate / healthRate).toFixed(2),
  };
}

const results = {};
const modes = values.db === 'both' ? ['embedded', 'postgres'] : values.db.split(',');
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const db of modes) {
    let env;
    const onPostgres = db !== 'embedded';
    if (onPostgres) {
      const url = startPostgres({ port: PG_PORT, durable: true, name: 'billing-bench' });
      env = { DATABASE_URL: url, DATABASE_POOL_SIZE: '20' };
      if (db === 'postgres-unprepared') env.DATABASE_PREPARE = '0';
      if (db === 'pgbouncer') env = { DATABASE_URL: startPgBouncer({ port: PG_PORT + 1, pgPort: PG_PORT, name: 'billing-bench' }), DATABASE_POOL_SIZE: '20', DATABASE_PREPARE: '0' };
    } else {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-'));
      env = { DATA_DIR: dir };
    }
    const server = await startServer(env);
    const key = Number(values.rounds) > 1 ? `${db} #${round}` : db;
    try {
      const ctx = await setup(server.base);
      results[key] = await measure(server.base, ctx);
      console.log(key, results[key]);
    } finally {
      await server.stop();
      if (db === 'pgbouncer') stopPgBouncer({ port: PG_PORT + 1, name: 'billing-bench' });
      if (onPostgres) stopPostgres({ port: PG_PORT, name: 'billing-bench' });
    }
  }
}
fs.mkdirSync(path.join(root, 'bench/results'), { recursive: true });
fs.writeFileSync(path.join(root, 'bench/results/ingest.json'), JSON.stringify({ at: new Date().toISOString(), cpus: os.cpus().length, results }, null, 2));
console.log(JSON.stringify(results, null, 2));
agent.destroy();
