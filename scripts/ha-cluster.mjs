// A PostgreSQL cluster with automatic failover on this machine, for `npm run test:failover`, the
// benchmarks and trying things by hand: one etcd member (Patroni's consensus store) and two
// Patroni nodes, each running its PostgreSQL: a primary and a synchronous standby
// (`synchronous_mode_strict`: no commit is acknowledged before the standby has flushed it).
//
//   node scripts/ha-cluster.mjs start [base port]   # prints DATABASE_URL (both hosts, read-write)
//   node scripts/ha-cluster.mjs status [base port]
//   node scripts/ha-cluster.mjs stop [base port]
//
// Ports, from the base (HA_PORT_BASE, default 25400): etcd client base, etcd peer base+1,
// PostgreSQL base+11, base+12, Patroni's REST API base+21, base+22.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { findPgBin } from './pg.mjs';

const isRoot = process.getuid?.() === 0;
export const HA_USER = 'billing';
export const HA_PASSWORD = 'billing-ha-password';
export const HA_DATABASE = 'billing';
const SUPERUSER_PASSWORD = 'ha-superuser-password';

/** Where everything of the cluster on `base` lives, and its ports. */
export function haLayout(base = Number(process.env.HA_PORT_BASE ?? 25400), nodes = 2) {
  const dir = path.join(os.tmpdir(), `billing-ha-${base}`);
  return {
    base,
    dir,
    etcd: { client: base, peer: base + 1, dir: path.join(dir, 'etcd') },
    nodes: Array.from({ length: nodes }, (_, i) => ({
      name: `node${i + 1}`,
      pgPort: base + 11 + i,
      apiPort: base + 21 + i,
      dataDir: path.join(dir, `node${i + 1}`, 'data'),
      config: path.join(dir, `node${i + 1}`, 'patroni.yml'),
      log: path.join(dir, `node${i + 1}`, 'patroni.log'),
    })),
  };
}

/** The service's URL: every node, the one that takes writes chosen at connect time. */
export function haDatabaseUrl(layout, attrs = 'read-write') {
  const hosts = layout.nodes.map((n) => `127.0.0.1:${n.pgPort}`).join(',');
  return `postgres://${HA_USER}:${HA_PASSWORD}@${hosts}/${HA_DATABASE}?target_session_attrs=${attrs}`;
}

/** One node's own URL, as the superuser (setup and checks). */
export function nodeUrl(node, database = 'postgres') {
  return `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${node.pgPort}/${database}`;
}

/**
 * What makes a failover lose nothing, in Patroni's dynamic configuration: the same in the test
 * cluster and in the compose profile's deploy/ha/patroni.yml (scripts/ha-compose.test.ts holds
 * them together).
 */
export const DURABILITY = {
  // A crashed primary is not restarted in place: its synchronous standby, which holds every
  // acknowledged commit, takes over at once.
  primary_start_timeout: 0,
  // Only a standby known to hold every acknowledged commit is promoted, and no commit is
  // acknowledged before a synchronous standby has it (writes wait while none is connected).
  synchronous_mode: true,
  synchronous_mode_strict: true,
  synchronous_node_count: 1,
  check_timeline: true,
};
export const DURABLE_POSTGRESQL = { use_pg_rewind: true, synchronous_commit: 'on' };

/**
 * Patroni's settings for one node. Patroni keeps the `bootstrap.dcs` part in etcd when the
 * cluster is made; every node then follows it (`patronictl edit-config` changes it later).
 */
function patroniConfig(layout, node, { fsync }) {
  return {
    scope: 'billing',
    namespace: '/billing-ha/',
    name: node.name,
    restapi: { listen: `127.0.0.1:${node.apiPort}`, connect_address: `127.0.0.1:${node.apiPort}` },
    etcd3: { hosts: [`127.0.0.1:${layout.etcd.client}`] },
    bootstrap: {
      dcs: {
        // A node whose Patroni stops renewing the leader key loses it after `ttl` seconds;
        // Patroni checks every `loop_wait` (loop_wait + 2 × retry_timeout ≤ ttl).
        // Shorter than Patroni's defaults (30, 10, 10), which the compose profile keeps: a
        // lost machine is noticed within ttl here, a crashed PostgreSQL within loop_wait.
        ttl: 20,
        loop_wait: 2,
        retry_timeout: 5,
        ...DURABILITY,
        postgresql: {
          use_pg_rewind: DURABLE_POSTGRESQL.use_pg_rewind,
          use_slots: true,
          parameters: {
            synchronous_commit: DURABLE_POSTGRESQL.synchronous_commit,
            wal_log_hints: 'on',
            max_connections: 200,
            max_wal_senders: 10,
            max_replication_slots: 10,
            wal_keep_size: '256MB',
            hot_standby: 'on',
          },
        },
      },
      initdb: [{ encoding: 'UTF8' }, { locale: 'C' }, 'data-checksums'],
      pg_hba: [
        'local all all trust',
        'host replication replicator 127.0.0.1/32 scram-sha-256',
        'host all all 127.0.0.1/32 scram-sha-256',
      ],
    },
    postgresql: {
      listen: `127.0.0.1:${node.pgPort}`,
      connect_address: `127.0.0.1:${node.pgPort}`,
      data_dir: node.dataDir,
      bin_dir: findPgBin(),
      pgpass: path.join(path.dirname(node.dataDir), 'pgpass'),
      authentication: {
        superuser: { username: 'postgres', password: SUPERUSER_PASSWORD },
        replication: { username: 'replicator', password: 'ha-replication-password' },
        rewind: { username: 'rewinder', password: 'ha-rewind-password' },
      },
      parameters: {
        unix_socket_directories: path.dirname(node.dataDir),
        password_encryption: 'scram-sha-256',
        // The test machine's own choice (a kill of processes, not of the machine, is what is tried).
        ...(fsync ? {} : { fsync: 'off' }),
      },
    },
    tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
  };
}

function asPostgresArgs(bin, args) {
  return isRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

/** Starts a long-running program of the cluster in a process group of its own; its pid goes into `pids`. */
function startDaemon(layout, name, bin, args, logFile) {
  const [cmd, argv] = asPostgresArgs(bin, args);
  const out = fs.openSync(logFile, 'a');
  const child = spawn(cmd, argv, { stdio: ['ignore', out, out], detached: true, env: { ...process.env, PYTHONUNBUFFERED: '1' } });
  child.unref();
  fs.closeSync(out);
  const pids = readPids(layout);
  pids[name] = child.pid;
  fs.writeFileSync(path.join(layout.dir, 'pids.json'), JSON.stringify(pids));
  return child.pid;
}

function readPids(layout) {
  try {
    return JSON.parse(fs.readFileSync(path.join(layout.dir, 'pids.json'), 'utf8'));
  } catch {
    return {};
  }
}

/** True when something accepts a TCP connection on the port (127.0.0.1). */
function answers(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (v) => {
      socket.destroy();
      resolve(v);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.setTimeout(1_000, () => done(false));
  });
}

const sleepSync = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function getJson(url, timeoutMs = 2_000) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, body: await res.json().catch(() => null) };
  } catch {
    return { status: 0, body: null };
  }
}

async function until(what, ok, timeoutMs, tail) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await ok();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${tail ? `\n${tail()}` : ''}`);
    await sleep(200);
  }
}

function tails(layout) {
  const read = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').slice(-3000) : '(no log)');
  return [`--- etcd\n${read(path.join(layout.dir, 'etcd.log'))}`, ...layout.nodes.map((n) => `--- ${n.name}\n${read(n.log)}`)].join('\n');
}

/** Patroni's view of the cluster, from any node that answers: `{ members: [{ name, role, state, lag }] }`. */
export async function clusterState(layout) {
  for (const n of layout.nodes) {
    const r = await getJson(`http://127.0.0.1:${n.apiPort}/cluster`);
    if (r.status === 200 && r.body?.members) return r.body;
  }
  return { members: [] };
}

/** The node whose PostgreSQL is the primary now (Patroni's leader, running), or null. */
export async function primaryNode(layout) {
  for (const n of layout.nodes) {
    const r = await getJson(`http://127.0.0.1:${n.apiPort}/primary`);
    if (r.status === 200) return n;
  }
  return null;
}

/**
 * True when the cluster is whole: one running primary and every other node a streaming
 * synchronous standby (with two nodes, the one that must have every acknowledged commit).
 */
export async function isHealthy(layout) {
  const { members } = await clusterState(layout);
  if (members.length !== layout.nodes.length) return false;
  const leaders = members.filter((m) => m.role === 'leader' && m.state === 'running');
  const sync = members.filter((m) => m.role === 'sync_standby' && (m.state === 'streaming' || m.state === 'running'));
  return leaders.length === 1 && sync.length === layout.nodes.length - 1;
}

export async function waitHealthy(layout, timeoutMs = 90_000) {
  await until('a primary and a synchronous standby', () => isHealthy(layout), timeoutMs, () => `${JSON.stringify(readState(layout))}\n${tails(layout)}`);
}

function readState(layout) {
  return { pids: readPids(layout) };
}

/** Runs SQL on one node as the superuser, through psql (no driver needed here). */
export function psql(layout, node, sql, database = 'postgres') {
  const r = spawnSync(path.join(findPgBin(), 'psql'), ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-c', sql, nodeUrl(node, database)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql on ${node.name} failed: ${r.stderr || r.stdout}`);
  return r.stdout.trim();
}

/**
 * Starts etcd and Patroni on every node from nothing, waits for a primary with a synchronous
 * standby, creates the service's role and database, and returns the layout.
 */
export async function startHaCluster({ base, nodes = 2, fsync = false } = {}) {
  const layout = haLayout(base, nodes);
  // Another run's cluster on these ports is not ours to stop: say so instead.
  const running = Object.entries(readPids(layout)).filter(([, pid]) => groupAlive(pid));
  const ports = [layout.etcd.client, layout.etcd.peer, ...layout.nodes.flatMap((n) => [n.pgPort, n.apiPort])];
  const taken = [];
  for (const port of ports) if (await answers(port)) taken.push(port);
  if (running.length || taken.length) {
    throw new Error(
      `A cluster or other servers hold the ports from ${layout.base} (${running.map(([n, pid]) => `${n} pid ${pid}`).concat(taken.map((p) => `port ${p}`)).join(', ')}): ` +
        `stop a cluster of yours with \`node scripts/ha-cluster.mjs stop ${layout.base}\`, or set HA_PORT_BASE to free ports.`,
    );
  }
  stopHaCluster({ base: layout.base, nodes });
  fs.rmSync(layout.dir, { recursive: true, force: true });
  fs.mkdirSync(layout.etcd.dir, { recursive: true });
  for (const n of layout.nodes) {
    fs.mkdirSync(path.dirname(n.dataDir), { recursive: true });
    fs.writeFileSync(n.config, JSON.stringify(patroniConfig(layout, n, { fsync }), null, 2));
  }
  if (isRoot) execFileSync('chown', ['-R', 'postgres:postgres', layout.dir]);
  const etcdUrl = (p) => `http://127.0.0.1:${p}`;
  startDaemon(
    layout,
    'etcd',
    findProgram('etcd', 'etcd-server'),
    [
      '--name', 'etcd1',
      '--data-dir', layout.etcd.dir,
      '--listen-client-urls', etcdUrl(layout.etcd.client),
      '--advertise-client-urls', etcdUrl(layout.etcd.client),
      '--listen-peer-urls', etcdUrl(layout.etcd.peer),
      '--initial-advertise-peer-urls', etcdUrl(layout.etcd.peer),
      '--initial-cluster', `etcd1=${etcdUrl(layout.etcd.peer)}`,
      '--initial-cluster-state', 'new',
      '--log-level', 'warn',
    ],
    path.join(layout.dir, 'etcd.log'),
  );
  await until('etcd', async () => (await getJson(`${etcdUrl(layout.etcd.client)}/health`)).body?.health === 'true', 30_000, () => tails(layout));
  // The first node bootstraps the cluster (initdb) and takes the leader key; the others clone it.
  startNode(layout, layout.nodes[0]);
  await until('the first node to lead', async () => (await primaryNode(layout)) !== null, 90_000, () => tails(layout));
  for (const n of layout.nodes.slice(1)) startNode(layout, n);
  await waitHealthy(layout);
  const primary = await primaryNode(layout);
  psql(layout, primary, `create role ${HA_USER} login password '${HA_PASSWORD}'`);
  psql(layout, primary, `create database ${HA_DATABASE} owner ${HA_USER}`);
  return layout;
}

export function startNode(layout, node) {
  return startDaemon(layout, node.name, findProgram('patroni', 'patroni'), [node.config], node.log);
}

/** SIGKILL of a node's postmaster (read from its postmaster.pid): PostgreSQL dies as in a crash. */
export function killPostgres(node) {
  const pidFile = path.join(node.dataDir, 'postmaster.pid');
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!pid) throw new Error(`${node.name}: no postmaster pid in ${pidFile}`);
  process.kill(pid, 'SIGKILL');
  return pid;
}

/**
 * Installs Patroni and etcd from the distribution's packages when they are missing and this is a
 * Debian-like machine where we may (root, apt-get): what the failover test needs on a new machine
 * (.ci/run does the same before npm test). Otherwise findProgram says what to install.
 */
export function ensureHaPackages() {
  const missing = [['patroni', 'patroni'], ['etcd', 'etcd-server']].filter(([program]) => !programPath(program)).map(([, pkg]) => pkg);
  if (!missing.length || !isRoot || !fs.existsSync('/usr/bin/apt-get')) return missing;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () => spawnSync('apt-get', ['install', '-y', '-qq', ...missing], { env, encoding: 'utf8' });
  let r = install();
  // A new machine may have no package lists yet.
  if (r.status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { env, encoding: 'utf8' });
    r = install();
  }
  if (r.status !== 0) throw new Error(`apt-get install ${missing.join(' ')} failed: ${(r.stderr || r.stdout).slice(-2000)}`);
  return [];
}

function programPath(name) {
  for (const d of ['/usr/bin', '/usr/local/bin', '/usr/sbin']) if (fs.existsSync(path.join(d, name))) return path.join(d, name);
  return null;
}

function findProgram(name, pkg) {
  const found = programPath(name);
  if (found) return found;
  throw new Error(`${name} not found: install the ${pkg} package (apt-get install -y ${pkg})`);
}

function groupAlive(pid) {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops every program of the cluster at once, as a test's throwaway cluster may be: Patroni and
 * etcd with SIGKILL, then each PostgreSQL with an immediate stop (Patroni starts it in a session
 * of its own, so it outlives its Patroni). Leaves the directory for a post-mortem.
 */
export function stopHaCluster({ base, nodes = 2 } = {}) {
  const layout = haLayout(base, nodes);
  const pids = readPids(layout);
  for (const name of [...layout.nodes.map((n) => n.name), 'etcd']) {
    const pid = pids[name];
    if (!pid || !groupAlive(pid)) continue;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    for (let i = 0; i < 50 && groupAlive(pid); i++) sleepSync(100);
  }
  for (const n of layout.nodes) {
    if (!fs.existsSync(path.join(n.dataDir, 'postmaster.pid'))) continue;
    const [cmd, argv] = asPostgresArgs(path.join(findPgBin(), 'pg_ctl'), ['-D', n.dataDir, '-m', 'immediate', '-w', 'stop']);
    spawnSync(cmd, argv, { stdio: 'ignore' });
  }
  fs.rmSync(path.join(layout.dir, 'pids.json'), { force: true });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [cmd, baseArg] = process.argv.slice(2);
  const base = baseArg ? Number(baseArg) : undefined;
  if (cmd === 'start') {
    const layout = await startHaCluster({ base, fsync: process.env.HA_FSYNC === '1' });
    console.log(haDatabaseUrl(layout));
  } else if (cmd === 'status') {
    const layout = haLayout(base);
    console.log(JSON.stringify(await clusterState(layout), null, 2));
  } else if (cmd === 'stop') {
    stopHaCluster({ base });
  } else {
    console.error('usage: node scripts/ha-cluster.mjs start|status|stop [base port]');
    process.exit(2);
  }
}
