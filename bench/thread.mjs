// The embedded database's thread on its own: the time from sending a statement to
// scripts/pglite-thread.mjs to having its rows back, as lib/db/pglite-thread.ts sends them (drizzle's
// text-keeping types, rows as arrays), on an in-memory database. What each statement of the
// embedded service pays besides PostgreSQL's own work.
// Usage: node bench/thread.mjs [--script scripts/pglite-thread.mjs] [--rounds 2]
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { script: { type: 'string', default: path.join(root, 'scripts/pglite-thread.mjs') }, rounds: { type: 'string', default: '2' } } });

const worker = new Worker(path.resolve(values.script), { workerData: { dataDir: null } });
const waiting = new Map();
let nextId = 0;
worker.on('message', (m) => {
  const w = waiting.get(m.id);
  waiting.delete(m.id);
  if (m.error) w.reject(new Error(m.error.message));
  else w.resolve(m.result);
});
const call = (message) =>
  new Promise((resolve, reject) => {
    const id = ++nextId;
    waiting.set(id, { resolve, reject });
    worker.postMessage({ id, ...message });
  });
// The types drizzle keeps as text: timestamp, timestamptz, interval, date and their arrays, numeric[].
const RAW = [1114, 1184, 1186, 1082, 1231, 1115, 1185, 1187, 1182];
const query = (text, params = []) => call({ op: 'query', text, params, rowMode: 'array', raw: RAW });

async function time(n, fn) {
  for (let i = 0; i < Math.min(50, n); i++) await fn(i);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  return Math.round(((performance.now() - t0) / n) * 1000);
}

await call({ op: 'ready' });
await query('create table t (id text primary key, n numeric not null, at timestamptz not null)');
await query("insert into t select 'r' || g, g, now() from generate_series(1, 1000) g");
const ids = Array.from({ length: 1000 }, (_, i) => `r${i + 1}`);
const out = [];
for (let round = 1; round <= Number(values.rounds); round++) {
  out.push({
    round,
    select_1_us: await time(3000, () => query('select 1')),
    row_by_key_us: await time(3000, (i) => query('select id, n, at from t where id = $1', [ids[i % 1000]])),
    update_by_key_us: await time(2000, (i) => query('update t set n = n + 1 where id = $1', [ids[i % 1000]])),
    rows_1000_by_array_us: await time(100, () => query('select t.id, t.n, t.at from t join unnest($1::text[]) as v(id) on v.id = t.id', [ids])),
  });
}
console.log(JSON.stringify(out, null, 2));
await call({ op: 'close' });
await worker.terminate();
