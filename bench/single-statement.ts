// The single-event statement alone: what one gated event costs PostgreSQL, without the server.
// It builds the statement the way the server does (recordSingleEvent, with a client that keeps
// the SQL and its values instead of sending them), then sends it, prepared, EVENTS times over
// the accounts of the newest company in DATABASE_URL (the ingest benchmark's, for one), IN_FLIGHT
// at a time over POOL connections, after a warm-up past each connection's first plans; and
// prints the events written, their rate and PostgreSQL's CPU per event (its processes' user and
// system time from /proc, so PostgreSQL must run on this machine).
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:32433/postgres npx tsx bench/single-statement.ts
//
// The file runs unchanged in a worktree of an older version whose recordSingleEvent has the same
// arguments, so two versions' statements can be sent in turn to their own databases.
import os from 'node:os';
import postgres from 'postgres';
import { recordSingleEvent } from '../lib/billing/events/single';
// @ts-expect-error plain ESM helper shared with bench/ingest/run.mjs
import { parentPid, treeCpuMs } from './proc-cpu.mjs';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL: the database to send the statement to');
const EVENTS = Number(process.env.EVENTS ?? 3000);
const IN_FLIGHT = Number(process.env.IN_FLIGHT ?? 32);
const POOL = Number(process.env.POOL ?? 10);

// The statement and one set of its values, as recordSingleEvent sends them for a gated `call`.
let captured: { text: string; values: unknown[] } | undefined;
const keeper = { session: { client: { unsafe: async (text: string, values: unknown[]) => ((captured = { text, values }), []) } } };
const at0 = new Date();
await recordSingleEvent({ db: keeper as never, companyId: '\u0000company', accountId: '\u0000account', input: { type: 'call', gate_on_balance: true }, now: at0 });
if (!captured) throw new Error('recordSingleEvent sent no statement');
const { text, values } = captured;

const sql = postgres(url, { max: POOL, prepare: true, onnotice: () => {} });
const [newest] = await sql<{ company_id: string }[]>`select company_id from accounts order by created_at desc limit 1`;
if (!newest) throw new Error('no accounts: run the ingest benchmark against this database first (--db external)');
const accounts = (await sql<{ id: string }[]>`select a.id from accounts a where a.company_id = ${newest.company_id} and exists (select 1 from balances b where b.account_id = a.id)`).map((r) => r.id);

let seq = 0;
/** The captured values for one event: its account, fresh ids, the times moved to now. */
function valuesFor(account: string): unknown[] {
  const now = Date.now();
  const ids = new Map<string, string>();
  return values.map((v) => {
    if (v === '\u0000account') return account;
    if (v === '\u0000company') return newest!.company_id;
    if (typeof v !== 'string') return v;
    const prefix = /^(ev|tx|whd)_/.exec(v)?.[1];
    if (prefix) {
      if (!ids.has(v)) ids.set(v, `${prefix}_s${process.pid.toString(36)}${(seq++).toString(36).padStart(10, '0')}`);
      return ids.get(v);
    }
    if (/^\d{4}-\d\d-\d\dT/.test(v)) return new Date(now + (Date.parse(v) - at0.getTime())).toISOString();
    return v;
  });
}

/** CPU time (ms) of PostgreSQL's processes: the postmaster of a backend of ours, and its children. */
async function postgresCpuMs(): Promise<number> {
  const [{ pid }] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  return treeCpuMs(parentPid(pid));
}

async function send(count: number): Promise<number> {
  let next = 0;
  let written = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) {
        const i = next++;
        const [row] = await sql.unsafe(text, valuesFor(accounts[(i * 7) % accounts.length]) as never[], { prepare: true });
        if (row?.inserted) written++;
      }
    }),
  );
  return written;
}

await send(POOL * 40);
const cpu0 = await postgresCpuMs();
const t0 = performance.now();
const written = await send(EVENTS);
const seconds = (performance.now() - t0) / 1000;
const cpu = (await postgresCpuMs()) - cpu0;
console.log(JSON.stringify({ events: EVENTS, written, per_s: Math.round(EVENTS / seconds), pg_cpu_ms_per_event: +(cpu / EVENTS).toFixed(3), load: +os.loadavg()[0].toFixed(1) }));
await sql.end();
