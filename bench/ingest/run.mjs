// Ingest benchmark: starts the built production server (scripts/serve.mjs, what `npm start`
// runs) on each database and measures, against that one server, the modes named by --only
// (default batch,single,health):
//   batch    batches of 1000 plan-priced events over 1000 accounts, --writers at a time (4);
//            --shape spread (each account once a batch, the default), random (1000 picks from
//            the 1000 with repeats) or few (1000 picks from 20 accounts)
//   single   single gated events at 32 connections over the 1000 accounts: rate, p50, p99
//   keyed    the same with an Idempotency-Key on every request (its claim, the event and its
//            stored answer are one transaction)
//   hot      single gated events at 64 connections on one account; checks the balance fell by
//            exactly the accepted events
//   reads    GET .../balance/credits at 32 connections
//   latency  single gated events from one connection in a loop, then from four: p50, p99;
//            then GET /health from one connection, the floor under them
//   health   GET /health at 32 connections: the framework's own ceiling
//   soak     single gated events at 32 connections for --soak seconds (600), the server's RSS
//            every 10 s, and its growth after the first minute
//   grants   single gated events at 32 connections on balances with one grant (the plan's
//            allowance) and on balances with three (two more of other priorities and expiries),
//            alternately (--ab-rounds pairs, default 3): the rate of three over the rate of one
//   priced   gated events priced by a rate card (third of three rules, two components) against
//            flat-priced ones, 32 connections, alternately (--ab-rounds pairs): priced_vs_flat
//   check    POST /check against the gated event it answers for, one connection, alternately
//   spend    single gated events at 32 connections on accounts with spend limits on their
//            balance (a daily `reject` limit and a monthly `notify` one, neither reached) and on
//            accounts without, alternately (--ab-rounds pairs): spend_limited_vs_plain
//   priced-batch  batches of 1000 items priced by the rate card (as `priced`) against batches of
//            flat-priced items, --batches each, --writers at a time, alternately (--ab-rounds
//            pairs), the accounts of each batch by --shape (run it with --shape random):
//            priced_batch_vs_flat; with --carried, a third batch in each round: flat-priced items
//            that carry the same quantities and properties (what carrying them costs, unpriced)
//   (grants, priced, spend and priced-batch run every other round in the reverse order, so no
//   kind always runs on a warmer server)
//   expiry   (PostgreSQL, the test clock on) --expiring grants (100,000) due at one instant over
//            the accounts' balances (bench/grants/seed-expiring.ts), then the test clock moves
//            past it and the server's worker writes the expiries at its next tick while gated
//            events flow at 32 connections: the seconds until no grant is due, and the events'
//            rate meanwhile
// Every run reports the server's peak RSS (its process tree) over the modes; batch and single
// also report CPU per unit of work of the app's processes and of PostgreSQL (from /proc), the
// inputs of the capacity model in bench/README.md, and of the load generator itself.
// Usage: npm run build && node bench/ingest/run.mjs [--db embedded|postgres|both] [--seconds 10]
//   --db pgbouncer: PostgreSQL behind PgBouncer in transaction mode, DATABASE_PREPARE=0;
//   --db postgres-unprepared: direct, DATABASE_PREPARE=0. --db takes a comma-separated list and
//   --rounds N runs the list N times in turn (alternating, so machine noise hits every mode);
//   --port P: PostgreSQL's port (default 26432, below the kernel's range of ports for outgoing
//   connections, which one of those could hold), PgBouncer on P + 1;
//   --web-concurrency N: serving processes on the one port (PostgreSQL only);
//   --pool N: each serving process's DATABASE_POOL_SIZE (default: the service's own, 10; runs
//   before the afternoon of 2026-11-26 used 20);
//   --db external: the PostgreSQL at BENCH_EXTERNAL_DB, left running (e.g. for pg_stat_statements);
//   --launcher npm-start: serve through `npm start` (npm, the launcher, the server, the bundled
//   local Stripe server when it starts one): the peak RSS is then that whole tree's, listed per
//   process in peak_tree.
// BENCH_SERVER_LOG=file appends the server's log lines to file (otherwise they are dropped).
// BENCH_SERVER_FLAGS='--flag ...' passes Node.js flags to the server (e.g. a V8 heap setting).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { startPgBouncer, startPostgres, stopPgBouncer, stopPostgres } from '../../scripts/pg.mjs';
import { treeCpuMs } from '../proc-cpu.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const { values } = parseArgs({ options: { db: { type: 'string', default: 'both' }, seconds: { type: 'string', default: '10' }, batches: { type: 'string', default: '60' }, writers: { type: 'string', default: '4' }, only: { type: 'string', default: 'batch,single,health' }, shape: { type: 'string', default: 'spread' }, launcher: { type: 'string', default: 'serve' }, soak: { type: 'string', default: '600' }, 'web-concurrency': { type: 'string', default: '1' }, rounds: { type: 'string', default: '1' }, port: { type: 'string', default: '26432' }, pool: { type: 'string' }, 'ab-rounds': { type: 'string', default: '3' }, 'expiry-connections': { type: 'string', default: '32' }, worker: { type: 'string', default: 'server' }, expiring: { type: 'string', default: '100000' }, carried: { type: 'boolean', default: false } } });
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
  // The production server (`npm start` serves through it): WEB_CONCURRENCY processes on one port.
  // --launcher npm-start: what a user runs, `npm start` (npm, the launcher, the server and anything
  // they start); the peak is then that whole tree's.
  const [command, args] = values.launcher === 'npm-start'
    ? ['npm', ['start']]
    : [process.execPath, [...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []), ...(process.env.BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean), path.join(root, 'scripts/serve.mjs')]];
  const child = spawn(command, args, {
    cwd: root,
    env: {
      ...process.env, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1', PORT: String(port), WEB_CONCURRENCY: values['web-concurrency'],
      ADMIN_TOKEN: ADMIN, RATE_LIMIT_PER_SECOND: '0', APP_SECRET: 'bench-secret-of-at-least-32-bytes-0123456789', ...env,
    },
    // BENCH_SERVER_LOG=file keeps the server's log lines (its standard output).
    stdio: ['ignore', process.env.BENCH_SERVER_LOG ? fs.openSync(process.env.BENCH_SERVER_LOG, 'a') : 'ignore', 'inherit'],
    // A process group of its own, stopped whole: npm does not pass a SIGTERM on to the script it runs
    // (a terminal's Ctrl-C reaches them all, as the group's).
    detached: values.launcher === 'npm-start',
  });
  const kill = (signal) => (values.launcher === 'npm-start' ? process.kill(-child.pid, signal) : child.kill(signal));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await request(base, 'GET', '/health')).status === 200) return { base, pid: child.pid, stop: () => new Promise((r) => { child.once('exit', r); kill('SIGTERM'); }) };
    } catch { /* starting */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  kill('SIGKILL');
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
  if (reg.status !== 200) throw new Error(`registering the company answered ${reg.status}: ${JSON.stringify(reg.body)}`);
  const { id, api_key } = reg.body.data;
  const auth = { authorization: `Basic ${Buffer.from(`${id}:${api_key}`).toString('base64')}` };
  const plan = await request(base, 'POST', `/v1/companies/${id}/plans`, {
    name: 'Bench', charge_amount: 0, balances: [{ amount: 100000000, denomination: 'credits' }],
    billing_rules: [
      { type: 'call', amount: '0.01', denomination: 'credits' },
      // The rate card of `priced`: three rules of one type, the third matching, two components.
      ...['a', 'b', 'c'].map((model) => ({
        type: 'llm', denomination: 'credits', filters: { model },
        components: [{ quantity: 'input_tokens', unit_amount: '0.000003' }, { quantity: 'output_tokens', unit_amount: '0.000015' }],
      })),
    ],
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
  return { id, auth, accounts };
}

/** The server's resident memory: its process and every process it started (WEB_CONCURRENCY), in MB. */
function treeRssMb(pid) {
  return Math.round(treeRss(pid).reduce((kb, p) => kb + p.kb, 0) / 1024);
}

/** Each process of the tree: its pid, command line and resident memory (kB). */
function treeRss(pid) {
  const out = [];
  const visit = (p) => {
    try {
      const status = fs.readFileSync(`/proc/${p}/status`, 'utf8');
      const field = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      const kb = field('VmRSS');
      // RssFile: pages of mapped files (the node binary above all), which processes running the same binary share.
      // Pss: the process's share of each page, so pages the processes share (the node binary) count once over the tree.
      const pssKb = Number(/^Pss:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
      out.push({ pid: Number(p), kb, pssKb, anonKb: field('RssAnon'), fileKb: field('RssFile'), cmd: fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').filter(Boolean).map((a) => path.basename(a)).join(' ').slice(0, 60) });
      for (const t of fs.readdirSync(`/proc/${p}/task`)) {
        for (const c of fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(' ').filter(Boolean)) visit(c);
      }
    } catch { /* gone */ }
  };
  visit(pid);
  return out;
}

/** PostgreSQL's postmaster, whose children are the backends serving the app. */
function postgresPid() {
  try {
    return Number(fs.readFileSync(path.join(os.tmpdir(), `billing-bench-pg-${PG_PORT}`, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return null;
  }
}

/** Runs `fn` and reports the app's and PostgreSQL's CPU per unit of work (`units()` after it ran). */
async function withCpu(server, fn) {
  const pg = postgresPid();
  const app0 = treeCpuMs(server.pid);
  const db0 = pg ? treeCpuMs(pg) : 0;
  // The load generator (this process) shares the cores too.
  const load0 = process.cpuUsage();
  const r = await fn();
  const load = process.cpuUsage(load0);
  return { r, appMs: treeCpuMs(server.pid) - app0, dbMs: pg ? treeCpuMs(pg) - db0 : null, loadMs: (load.user + load.system) / 1000 };
}

/**
 * Measures `kinds` alternately, one run of each a round for --ab-rounds rounds, every other round
 * in the reverse order so no kind always runs on a warmer server. `run(name, round)` makes one
 * run and returns its rate and the units of work it did ({ rate, count }, as gatedLoop). Returns
 * each kind's runs (with the server's and PostgreSQL's CPU over each, as withCpu), its rates
 * (rounded) and CPU ms per unit, round by round, and the rate of a kind against the first kind's:
 * over all rounds (`ratio`) and per round (`pairRatios`).
 */
async function alternately(server, kinds, run) {
  const of = (f) => Object.fromEntries(kinds.map((name) => [name, f(name)]));
  const runs = of(() => []);
  for (let round = 0; round < Number(values['ab-rounds']); round++) {
    for (const name of round % 2 ? [...kinds].reverse() : kinds) runs[name].push(await withCpu(server, () => run(name, round)));
  }
  const rates = of((name) => runs[name].map(({ r }) => Math.round(r.rate)));
  const perUnit = (ms) => (name) => runs[name].filter((x) => x[ms] !== null).map((x) => +(x[ms] / x.r.count).toFixed(2));
  const sum = (a) => a.reduce((x, y) => x + y, 0);
  const [first] = kinds;
  return {
    runs,
    rates,
    appCpuMs: of(perUnit('appMs')),
    dbCpuMs: of(perUnit('dbMs')),
    ratio: (name) => +(sum(rates[name]) / sum(rates[first])).toFixed(3),
    pairRatios: (name) => rates[first].map((o, i) => +(rates[name][i] / o).toFixed(2)),
  };
}

/**
 * Gated single events on `pick(connection, n)`'s account, `connections` at a time for `seconds`;
 * with `keyed`, each request carries an Idempotency-Key of its own.
 */
async function gatedLoop(base, auth, connections, seconds, pick, onSample, keyed = false, what = {}) {
  const body = what.body ?? { type: 'call', gate_on_balance: true };
  const verb = what.path ?? 'events';
  const run = Date.now().toString(36);
  const lat = [];
  let stop = false;
  let rejected = 0;
  const t0 = performance.now();
  // `seconds`: a number, or a promise whose settling stops the loop.
  const timer = typeof seconds === 'number' ? setTimeout(() => (stop = true), seconds * 1000) : void seconds.then(() => (stop = true), () => (stop = true));
  await pool(connections, async (c) => {
    let n = 0;
    while (!stop) {
      const s = performance.now();
      const headers = keyed ? { ...auth, 'idempotency-key': `bench-${run}-${c}-${n}` } : auth;
      const r = await request(base, 'POST', `/v1/accounts/${pick(c, n++)}/${verb}`, body, headers);
      if (r.status === 402) rejected++;
      else if (r.status !== 200) throw new Error(`event failed ${r.status} ${JSON.stringify(r.body)}`);
      lat.push(performance.now() - s);
      onSample?.(lat.length);
    }
  });
  clearTimeout(timer);
  const rate = lat.length / ((performance.now() - t0) / 1000);
  lat.sort((a, b) => a - b);
  return { rate, p50: +pct(lat, 50).toFixed(1), p99: +pct(lat, 99).toFixed(1), count: lat.length, rejected };
}

/** A small seeded generator (mulberry32): the same batches in every run. */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The accounts of batch number `n`, by `--shape`: `spread`, each of the 1000 accounts once;
 * `random`, 1000 picks at random from the 1000 (with repeats, about 630 distinct), the shape a
 * company's traffic has; `few`, 1000 picks at random from 20 of them.
 */
function batchAccountsFor(accounts) {
  return (n) => {
    if (values.shape === 'spread') return Array.from({ length: 1000 }, (_, i) => accounts[(i * 7 + n) % accounts.length]);
    const pool = values.shape === 'few' ? accounts.slice(0, 20) : values.shape === 'random' ? accounts : null;
    if (!pool) throw new Error(`--shape: spread, random or few, not ${values.shape}`);
    const next = seeded(n);
    return Array.from({ length: 1000 }, () => pool[Math.floor(next() * pool.length)]);
  };
}

async function measure(server, { id, auth, accounts }, env) {
  const batchAccounts = batchAccountsFor(accounts);
  const base = server.base;
  const only = new Set(values.only.split(','));
  const out = {};
  let peak = 0;
  let peakTree = [];
  let peakPss = 0;
  const sampler = setInterval(() => {
    const tree = treeRss(server.pid);
    const mb = Math.round(tree.reduce((kb, p) => kb + p.kb, 0) / 1024);
    if (mb > peak) [peak, peakTree] = [mb, tree];
    peakPss = Math.max(peakPss, Math.round(tree.reduce((kb, p) => kb + p.pssKb, 0) / 1024));
  }, 250);
  try {
    if (only.has('batch')) {
      // Batches of 1000 events over the 1000 accounts, `--writers` at a time.
      const batches = Number(values.batches);
      let sent = 0;
      const t0 = performance.now();
      const cpu = await withCpu(server, () =>
        pool(Number(values.writers), async () => {
          while (sent < batches) {
            sent++;
            const items = batchAccounts(sent).map((account_id) => ({ account_id, type: 'call' }));
            const r = await request(base, 'POST', '/v1/events', items, auth);
            if (r.status !== 200) throw new Error(`batch failed ${r.status} ${JSON.stringify(r.body)}`);
          }
        }),
      );
      out.batch_events_per_s = Math.round((batches * 1000) / ((performance.now() - t0) / 1000));
      // CPU per 1000 events: the app's processes and PostgreSQL's.
      out.batch_app_cpu_ms_per_1000 = +(cpu.appMs / batches).toFixed(1);
      if (cpu.dbMs !== null) out.batch_db_cpu_ms_per_1000 = +(cpu.dbMs / batches).toFixed(1);
      out.batch_load_cpu_ms_per_1000 = +(cpu.loadMs / batches).toFixed(1);
    }
    if (only.has('single')) {
      // Single gated events at 32 connections, spread over the 1000 accounts.
      const { r, appMs, dbMs, loadMs } = await withCpu(server, () => gatedLoop(base, auth, 32, SECONDS, (c, n) => accounts[(c * 31 + n) % accounts.length]));
      Object.assign(out, { single_gated_per_s: Math.round(r.rate), single_p50_ms: r.p50, single_p99_ms: r.p99 });
      // CPU per event: the app's processes, PostgreSQL's and the load generator's.
      out.single_app_cpu_ms = +(appMs / r.count).toFixed(2);
      if (dbMs !== null) out.single_db_cpu_ms = +(dbMs / r.count).toFixed(2);
      out.single_load_cpu_ms = +(loadMs / r.count).toFixed(2);
    }
    if (only.has('keyed')) {
      // The same, each request with its own Idempotency-Key, as a company's retrying backend sends them.
      const { r, appMs, dbMs } = await withCpu(server, () => gatedLoop(base, auth, 32, SECONDS, (c, n) => accounts[(c * 31 + n) % accounts.length], undefined, true));
      Object.assign(out, { keyed_gated_per_s: Math.round(r.rate), keyed_p50_ms: r.p50, keyed_p99_ms: r.p99, keyed_app_cpu_ms: +(appMs / r.count).toFixed(2) });
      if (dbMs !== null) out.keyed_db_cpu_ms = +(dbMs / r.count).toFixed(2);
    }
    if (only.has('hot')) {
      // 64 connections on one balance; then the balance must have fallen by exactly the accepted events.
      const hot = accounts[accounts.length - 1];
      const before = await request(base, 'GET', `/v1/accounts/${hot}/balance/credits`, undefined, auth);
      const r = await gatedLoop(base, auth, 64, SECONDS, () => hot);
      const after = await request(base, 'GET', `/v1/accounts/${hot}/balance/credits`, undefined, auth);
      const fell = Math.round((Number(before.body.data.amount) - Number(after.body.data.amount)) * 100);
      if (fell !== r.count - r.rejected) throw new Error(`hot account: ${r.count - r.rejected} events accepted but the balance fell by ${fell} cents`);
      Object.assign(out, { hot_gated_per_s: Math.round(r.rate), hot_p50_ms: r.p50, hot_p99_ms: r.p99 });
    }
    if (only.has('reads')) {
      // Balance reads at 32 connections.
      let n = 0;
      let stop = false;
      const t0 = performance.now();
      setTimeout(() => (stop = true), SECONDS * 1000);
      await pool(32, async (c) => {
        let i = 0;
        while (!stop) {
          const r = await request(base, 'GET', `/v1/accounts/${accounts[(c * 31 + i++) % accounts.length]}/balance/credits`, undefined, auth);
          if (r.status !== 200) throw new Error(`read failed ${r.status}`);
          n++;
        }
      });
      out.reads_per_s = Math.round(n / ((performance.now() - t0) / 1000));
    }
    if (only.has('latency')) {
      // A company's request path: one connection in a loop, then four.
      for (const conns of [1, 4]) {
        const r = await gatedLoop(base, auth, conns, SECONDS, (c, n) => accounts[(c * 31 + n) % accounts.length]);
        Object.assign(out, { [`latency${conns}_per_s`]: Math.round(r.rate), [`latency${conns}_p50_ms`]: r.p50, [`latency${conns}_p99_ms`]: r.p99 });
      }
      // The floor under it in the same run: GET /health (one `select 1`) from one connection.
      const lat = [];
      const end = performance.now() + SECONDS * 1000;
      while (performance.now() < end) {
        const s = performance.now();
        const r = await request(base, 'GET', '/health');
        if (r.status !== 200) throw new Error(`health failed ${r.status}`);
        lat.push(performance.now() - s);
      }
      lat.sort((a, b) => a - b);
      Object.assign(out, { latency1_health_p50_ms: +pct(lat, 50).toFixed(1), latency1_health_p99_ms: +pct(lat, 99).toFixed(1) });
    }
    if (only.has('health')) {
      // The framework's own ceiling on this machine: GET /health at 32 connections.
      let health = 0;
      let stop = false;
      const t0 = performance.now();
      setTimeout(() => (stop = true), SECONDS * 1000);
      await pool(32, async () => {
        while (!stop) {
          await request(base, 'GET', '/health');
          health++;
        }
      });
      out.health_per_s = Math.round(health / ((performance.now() - t0) / 1000));
      if (out.single_gated_per_s) out.single_vs_health = +(out.single_gated_per_s / out.health_per_s).toFixed(2);
      if (out.hot_gated_per_s && out.single_gated_per_s) out.hot_vs_single = +(out.hot_gated_per_s / out.single_gated_per_s).toFixed(2);
    }
    if (only.has('soak')) {
      // Single gated events at 32 connections for --soak seconds; the server's memory every 10 s.
      const samples = [];
      const timer = setInterval(() => samples.push(treeRssMb(server.pid)), 10_000);
      const r = await gatedLoop(base, auth, 32, Number(values.soak), (c, n) => accounts[(c * 31 + n) % accounts.length]);
      clearInterval(timer);
      // Warm-up: the first minute (or the first sixth of a shorter soak).
      const warm = samples.slice(Math.min(6, Math.floor(samples.length / 6)));
      const first = warm[0];
      const last = warm[warm.length - 1];
      Object.assign(out, {
        soak_per_s: Math.round(r.rate),
        soak_p99_ms: r.p99,
        soak_rss_after_warmup_mb: first,
        soak_rss_end_mb: last,
        soak_rss_max_mb: Math.max(...warm),
        soak_growth: +((Math.max(...warm) - first) / first).toFixed(3),
        soak_rss_samples_mb: samples,
      });
    }
    if (only.has('grants')) {
      // Half the accounts (`three`) get two grants besides the plan's allowance (priority 50, until
      // the period's end): priority 10 expiring in 30 days, drawn first, and priority 20 in 60
      // days. The other half (`one`) keeps the allowance alone. Neither runs out in the run.
      const half = accounts.length / 2;
      const sets = { one: accounts.slice(0, half), three: accounts.slice(half) };
      const day = 86_400_000;
      let next = 0;
      await pool(8, async () => {
        while (next < sets.three.length) {
          const account = sets.three[next++];
          for (const [priority, days] of [[10, 30], [20, 60]]) {
            const r = await request(base, 'POST', `/v1/accounts/${account}/balance/credits/grants`, { amount: '1000000', priority, expires_at: new Date(Date.now() + days * day).toISOString() }, auth);
            if (r.status !== 200) throw new Error(`grant failed ${r.status} ${JSON.stringify(r.body)}`);
          }
        }
      });
      const ab = await alternately(server, ['one', 'three'], (name) => gatedLoop(base, auth, 32, SECONDS, (c, n) => sets[name][(c * 31 + n) % sets[name].length]));
      for (const name of ['one', 'three']) {
        out[`grants_${name}_p99_ms`] = ab.runs[name].map(({ r }) => r.p99);
        out[`grants_${name}_app_cpu_ms`] = ab.appCpuMs[name];
        if (ab.dbCpuMs[name].length) out[`grants_${name}_db_cpu_ms`] = ab.dbCpuMs[name];
      }
      // The events drew from the priority-10 grant, as the order says, and left the others whole.
      const listed = await request(base, 'GET', `/v1/accounts/${sets.three[0]}/balance/credits/grants`, undefined, auth);
      const byPriority = Object.fromEntries(listed.body.data.map((g) => [g.priority, Number(g.remaining)]));
      if (!(byPriority[10] < 1000000 && byPriority[20] === 1000000 && listed.body.data.length === 3)) throw new Error(`three grants: unexpected draws ${JSON.stringify(byPriority)}`);
      Object.assign(out, {
        grants_one_per_s: ab.rates.one,
        grants_three_per_s: ab.rates.three,
        grants_pair_ratios: ab.pairRatios('three'),
        grants_three_vs_one: ab.ratio('three'),
      });
    }
    if (only.has('spend')) {
      // Half the accounts (`limited`) get spend limits on their credits, far above what the run
      // spends: every event is checked against them and counted, none is refused or notified.
      const half = accounts.length / 2;
      const sets = { plain: accounts.slice(0, half), limited: accounts.slice(half) };
      let next = 0;
      await pool(8, async () => {
        while (next < sets.limited.length) {
          const account = sets.limited[next++];
          const r = await request(base, 'PUT', `/v1/accounts/${account}/spend_limits`, [
            { denomination: 'credits', period: 'day', limit: '100000000', action: 'reject' },
            { denomination: 'credits', period: 'month', limit: '100000000', action: 'notify' },
          ], auth);
          if (r.status !== 200) throw new Error(`spend limits failed ${r.status} ${JSON.stringify(r.body)}`);
        }
      });
      const ab = await alternately(server, ['plain', 'limited'], (name) => gatedLoop(base, auth, 32, SECONDS, (c, n) => sets[name][(c * 31 + n) % sets[name].length]));
      for (const name of ['plain', 'limited']) out[`spend_${name}_p99_ms`] = ab.runs[name].map(({ r }) => r.p99);
      // The limited accounts' spend was counted: one of them shows what its events cost today.
      const limits = await request(base, 'GET', `/v1/accounts/${sets.limited[0]}/spend_limits`, undefined, auth);
      const spent = Number(limits.body.data?.find((l) => l.period === 'day')?.spent);
      if (!(spent > 0)) throw new Error(`spend limits: nothing counted ${JSON.stringify(limits.body)}`);
      Object.assign(out, {
        spend_plain_per_s: ab.rates.plain,
        spend_limited_per_s: ab.rates.limited,
        spend_pair_ratios: ab.pairRatios('limited'),
        spend_limited_vs_plain: ab.ratio('limited'),
      });
    }
    if (only.has('priced')) {
      // Gated events priced by the rate card (the third of three rules matching, two components)
      // against flat-priced gated events, 32 connections, alternately (--ab-rounds pairs).
      const priced = { type: 'llm', gate_on_balance: true, quantities: { input_tokens: 1200, output_tokens: 300 }, properties: { model: 'c' } };
      const ab = await alternately(server, ['flat', 'priced'], (name) =>
        gatedLoop(base, auth, 32, SECONDS, (c, n) => accounts[(c * 31 + n) % accounts.length], undefined, false, name === 'priced' ? { body: priced } : {}),
      );
      for (const name of ['flat', 'priced']) out[`priced_${name}_p99_ms`] = ab.runs[name].map(({ r }) => r.p99);
      Object.assign(out, { priced_flat_per_s: ab.rates.flat, priced_per_s: ab.rates.priced, priced_vs_flat: ab.ratio('priced') });
    }
    if (only.has('priced-batch')) {
      // Batches of rate-card-priced items against batches of flat-priced ones, the same accounts
      // batch for batch (--shape), alternately (--ab-rounds pairs).
      const usage = { quantities: { input_tokens: 1200, output_tokens: 300 }, properties: { model: 'c' } };
      const bodies = { flat: { type: 'call' }, priced: { type: 'llm', ...usage }, carried: { type: 'call', ...usage } };
      const batches = Number(values.batches);
      // Each round's kinds send the same batches (the accounts of batches round * --batches + 1 on).
      const ab = await alternately(server, values.carried ? ['flat', 'carried', 'priced'] : ['flat', 'priced'], async (name, round) => {
        let sent = 0;
        const t0 = performance.now();
        await pool(Number(values.writers), async () => {
          while (sent < batches) {
            const n = round * batches + ++sent;
            const items = batchAccounts(n).map((account_id) => ({ account_id, ...bodies[name] }));
            const r = await request(base, 'POST', '/v1/events', items, auth);
            if (r.status !== 200) throw new Error(`${name} batch failed ${r.status} ${JSON.stringify(r.body)}`);
            if (name === 'priced' && r.body.data[0]?.pricing?.rule !== 3) throw new Error(`priced batch: the third llm rule did not price it: ${JSON.stringify(r.body.data[0])}`);
          }
        });
        return { rate: (batches * 1000) / ((performance.now() - t0) / 1000), count: batches * 1000 };
      });
      Object.assign(out, { priced_batch_shape: values.shape, priced_batch_flat_events_per_s: ab.rates.flat, priced_batch_events_per_s: ab.rates.priced, priced_batch_vs_flat: ab.ratio('priced') });
      if (values.carried) Object.assign(out, { priced_batch_carried_events_per_s: ab.rates.carried, priced_batch_carried_vs_flat: ab.ratio('carried') });
    }
    if (only.has('check')) {
      // One connection: POST /check against the gated event it answers for, alternately; p50 and p99.
      const body = { type: 'llm', gate_on_balance: true, quantities: { input_tokens: 1200, output_tokens: 300 }, properties: { model: 'c' } };
      for (let round = 0; round < Number(values['ab-rounds']); round++) {
        for (const name of ['event', 'check']) {
          const r = await gatedLoop(base, auth, 1, SECONDS, (c, n) => accounts[n % accounts.length], undefined, false, { body, path: name === 'check' ? 'check' : 'events' });
          (out[`check_${name}_p50_ms`] ??= []).push(r.p50);
          (out[`check_${name}_p99_ms`] ??= []).push(r.p99);
        }
      }
    }
    if (only.has('expiry')) {
      // Grants all due at one instant a minute ahead of the (test) clock, made by the service's own writer.
      if (!env.DATABASE_URL) throw new Error('--only expiry runs on PostgreSQL');
      const admin = { authorization: `Bearer ${ADMIN}` };
      const clock = await request(base, 'GET', '/v1/test_clock', undefined, admin);
      if (clock.status !== 200) throw new Error(`the test clock answered ${clock.status}`);
      const at = new Date(Date.parse(clock.body.data.now) + 60_000).toISOString();
      // seed-expiring.ts as a child process, its last line of output as JSON (not spawnSync: this
      // process's idle keep-alive sockets must see the server close them meanwhile).
      const tsx = (extra) =>
        new Promise((resolve, reject) => {
          const child = spawn(path.join(root, 'node_modules/.bin/tsx'), [path.join(root, 'bench/grants/seed-expiring.ts')], {
            cwd: root, env: { ...process.env, DATABASE_URL: env.DATABASE_URL, COMPANY_ID: id, NOW: clock.body.data.now, EXPIRES_AT: at, GRANTS: values.expiring, ...extra }, stdio: ['ignore', 'pipe', 'inherit'],
          });
          let text = '';
          child.stdout.on('data', (c) => (text += c));
          child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(text.trim().split('\n').pop())) : reject(new Error(`seed-expiring.ts exited ${code}`))));
        });
      Object.assign(out, await tsx({}));
      // The rate before, with nothing due: what the rate during the expiry compares with.
      const before = await gatedLoop(base, auth, 32, SECONDS, (c, n) => accounts[(c * 31 + n) % accounts.length]);
      Object.assign(out, { before_gated_per_s: Math.round(before.rate), before_gated_p99_ms: before.p99 });
      // The clock moves past the instant; the server's worker writes the expiries at its next tick
      // (every second), while gated events flow. seed-expiring.ts counts what is due until nothing is.
      const expiring = tsx({ EXPIRE: '1' });
      // --expiry-connections 0: no events meanwhile (the worker's own speed).
      const flow = Number(values['expiry-connections']);
      const worker0 = server.workerPid ? treeCpuMs(server.workerPid) : 0;
      const { r, appMs, dbMs } = await withCpu(server, () => (flow ? gatedLoop(base, auth, flow, expiring, (c, n) => accounts[(c * 31 + n) % accounts.length]) : expiring));
      Object.assign(out, await expiring);
      if (flow) Object.assign(out, { expiry_gated_per_s: Math.round(r.rate), expiry_gated_p50_ms: r.p50, expiry_gated_p99_ms: r.p99, expiry_gated_events: r.count });
      out.expiry_app_cpu_s = +(appMs / 1000).toFixed(1);
      if (server.workerPid) out.expiry_worker_cpu_s = +((treeCpuMs(server.workerPid) - worker0) / 1000).toFixed(1);
      if (dbMs !== null) out.expiry_db_cpu_s = +(dbMs / 1000).toFixed(1);
      if (out.left_due_grants !== 0 || out.expire_rows < out.seeded_grants) throw new Error(`grants left due, or fewer expire rows than grants: ${JSON.stringify(out)}`);
    }
  } finally {
    clearInterval(sampler);
  }
  out.peak_rss_mb = Math.max(peak, treeRssMb(server.pid));
  // The processes at the peak, largest first: which of the tree holds what.
  // The same tree's proportional set size at its peak: what it takes of the machine's memory.
  out.peak_pss_mb = peakPss;
  out.peak_tree = peakTree.sort((a, b) => b.kb - a.kb).map((p) => `${p.cmd}: ${Math.round(p.kb / 1024)} MB (anonymous ${Math.round(p.anonKb / 1024)}, files ${Math.round(p.fileKb / 1024)})`);
  return out;
}

const results = {};
const modes = values.db === 'both' ? ['embedded', 'postgres'] : values.db.split(',');
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const db of modes) {
    let env;
    const onPostgres = db !== 'embedded';
    if (onPostgres) {
      const url = db === 'external' ? null : startPostgres({ port: PG_PORT, durable: true, name: 'billing-bench' });
      // The service's own pool size unless --pool says otherwise: what a deployment runs.
      const pool = values.pool ? { DATABASE_POOL_SIZE: values.pool } : {};
      env = { DATABASE_URL: url, ...pool };
      if (db === 'postgres-unprepared') env.DATABASE_PREPARE = '0';
      // A database the caller started (profiling: pg_stat_statements), left running.
      if (db === 'external') env = { DATABASE_URL: process.env.BENCH_EXTERNAL_DB, ...pool };
      if (db === 'pgbouncer') env = { DATABASE_URL: startPgBouncer({ port: PG_PORT + 1, pgPort: PG_PORT, name: 'billing-bench' }), ...pool, DATABASE_PREPARE: '0' };
    } else {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-'));
      env = { DATA_DIR: dir };
    }
    // The expiry benchmark moves the test clock.
    // --worker process: the server runs no worker; a `dist/worker.mjs` process of its own does.
    const server = await startServer({ ...env, ...(values.only.split(',').includes('expiry') && { BILLING_TEST_CLOCK: '1' }), ...(values.worker === 'process' && { WORKER: '0' }) });
    const worker = values.worker === 'process' ? spawn(process.execPath, [path.join(root, 'dist/worker.mjs')], {
      cwd: root, stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, ...env, BILLING_TEST_CLOCK: values.only.split(',').includes('expiry') ? '1' : '0', APP_SECRET: 'bench-secret-of-at-least-32-bytes-0123456789', NODE_ENV: 'production' },
    }) : null;
    server.workerPid = worker?.pid;
    const key = Number(values.rounds) > 1 ? `${db} #${round}` : db;
    try {
      const ctx = await setup(server.base);
      results[key] = await measure(server, ctx, env);
      console.log(key, results[key]);
    } finally {
      if (worker) await new Promise((r) => { worker.once('exit', r); worker.kill('SIGTERM'); });
      await server.stop();
      if (db === 'pgbouncer') stopPgBouncer({ port: PG_PORT + 1, name: 'billing-bench' });
      if (onPostgres && db !== 'external') stopPostgres({ port: PG_PORT, name: 'billing-bench' });
    }
  }
}
fs.mkdirSync(path.join(root, 'bench/results'), { recursive: true });
fs.writeFileSync(path.join(root, 'bench/results/ingest.json'), JSON.stringify({ at: new Date().toISOString(), cpus: os.cpus().length, results }, null, 2));
console.log(JSON.stringify(results, null, 2));
agent.destroy();
