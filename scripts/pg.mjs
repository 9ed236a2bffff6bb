// Starts and stops a throwaway PostgreSQL cluster from the machine's own binaries (tests, benchmarks).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function findPgBin() {
  const candidates = [process.env.PG_BIN, ...fs.existsSync('/usr/lib/postgresql') ? fs.readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)).map((v) => `/usr/lib/postgresql/${v}/bin`) : []].filter(Boolean);
  for (const c of candidates) if (fs.existsSync(path.join(c, 'pg_ctl'))) return c;
  throw new Error('PostgreSQL binaries not found: install the postgresql package (apt-get install -y postgresql) or set PG_BIN.');
}

const isRoot = process.getuid?.() === 0;

function asPostgres(bin, args, opts = {}) {
  const cmd = isRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const r = spawnSync(cmd[0], cmd[1], { encoding: 'utf8', ...opts });
  if (r.status !== 0) throw new Error(`${path.basename(bin)} failed: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/**
 * Starts a cluster in a fresh directory and returns its URL. `durable: false` (tests) turns off
 * fsync; benchmarks keep PostgreSQL's durable defaults. `durable: 'process'` keeps every commit
 * written to the kernel before it is acknowledged (a crash of PostgreSQL loses nothing
 * committed) without waiting for the disk (a crash of the machine could).
 */
export function startPostgres({ port = 24329, durable = false, name = 'billing-test' } = {}) {
  const bin = findPgBin();
  const dir = emptyClusterDir(port, name);
  asPostgres(path.join(bin, 'initdb'), ['-D', path.join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale']);
  return restartPostgres({ port, durable, name });
}

/**
 * Starts the cluster `startPostgres` made, on its existing data: after `stopPostgres` (an
 * immediate stop, as a crash) PostgreSQL recovers from its write-ahead log. Returns its URL.
 */
export function restartPostgres({ port = 24329, durable = false, name = 'billing-test' } = {}) {
  const dir = clusterDir(port, name);
  const options = [`-p ${port}`, `-k ${dir}`, "-c listen_addresses=127.0.0.1", '-c max_connections=300', '-c shared_buffers=256MB'];
  if (!durable) options.push('-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off');
  if (durable === 'process') options.push('-c fsync=off');
  // Extra server settings for a profiling run, e.g. PG_EXTRA_OPTIONS='-c shared_preload_libraries=pg_stat_statements'.
  if (process.env.PG_EXTRA_OPTIONS) options.push(process.env.PG_EXTRA_OPTIONS);
  // A port in the kernel's range for outgoing connections (32768–60999 on Linux) may be held by
  // one of them (PostgreSQL then logs "Address already in use" and stops): the tests' default
  // ports lie below it, and for another port, try again a little later.
  const logFile = path.join(dir, 'log');
  for (let attempt = 1; ; attempt++) {
    const logged = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').length : 0;
    try {
      asPostgres(path.join(findPgBin(), 'pg_ctl'), ['-D', path.join(dir, 'data'), '-o', options.join(' '), '-l', logFile, '-w', '-t', '60', 'start']);
      break;
    } catch (err) {
      const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(logged) : '';
      if (attempt >= 10 || !log.includes('Address already in use')) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
    }
  }
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}

const clusterDir = (port, name) => path.join(os.tmpdir(), `${name}-pg-${port}`);

/** The cluster directory of `port`, its cluster stopped and the directory emptied, owned by postgres. */
function emptyClusterDir(port, name) {
  const dir = clusterDir(port, name);
  stopPostgres({ port, name });
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  if (isRoot) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  return dir;
}

/**
 * Starts a streaming standby of the cluster `startPostgres` made on `primaryPort` (a base backup
 * with its recovery settings), on `port`, and returns its URL. Tests of read replicas and of
 * choosing the writable host among several use it.
 */
export function startStandby({ primaryPort, port, name = 'billing-test', primaryName = name }) {
  const bin = findPgBin();
  const dir = emptyClusterDir(port, name);
  // --checkpoint=fast: the base backup's checkpoint at once. A spread one (the default) paces
  // the primary's dirty pages (a fresh schema's) over part of checkpoint_timeout.
  asPostgres(path.join(bin, 'pg_basebackup'), ['-D', path.join(dir, 'data'), '-h', clusterDir(primaryPort, primaryName), '-p', String(primaryPort), '-U', 'postgres', '-X', 'stream', '-R', '--no-sync', '--checkpoint=fast']);
  return restartPostgres({ port, name });
}

/** Promotes a standby started by `startStandby` to a primary of its own. */
export function promoteStandby({ port, name = 'billing-test' }) {
  asPostgres(path.join(findPgBin(), 'pg_ctl'), ['-D', path.join(clusterDir(port, name), 'data'), '-w', 'promote']);
}

/** Stops the cluster at once (`-m immediate`: no checkpoint, as a crash; a start recovers). */
export function stopPostgres({ port = 24329, name = 'billing-test' } = {}) {
  const dir = path.join(clusterDir(port, name), 'data');
  if (!fs.existsSync(path.join(dir, 'postmaster.pid'))) return;
  try {
    asPostgres(path.join(findPgBin(), 'pg_ctl'), ['-D', dir, '-m', 'immediate', '-w', 'stop']);
  } catch {
    /* already stopped */
  }
}

export function findPgBouncer() {
  for (const c of [process.env.PGBOUNCER_BIN, '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].filter(Boolean)) if (fs.existsSync(c)) return c;
  throw new Error('PgBouncer not found: install the pgbouncer package (apt-get install -y pgbouncer) or set PGBOUNCER_BIN.');
}

/**
 * Starts PgBouncer in transaction mode (a server connection per transaction, as managed
 * "pooled" endpoints do) on `port`, in front of the cluster on `pgPort`, for every database on
 * it. Returns the URL of the `postgres` database through it.
 */
export function startPgBouncer({ port, pgPort, name = 'billing-test' }) {
  const dir = path.join(clusterDir(port, name), 'pgbouncer');
  stopPgBouncer({ port, name });
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'users.txt'), '"postgres" ""\n');
  const conf = [
    '[databases]',
    `* = host=127.0.0.1 port=${pgPort}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    `unix_socket_dir = ${dir}`,
    'auth_type = trust',
    `auth_file = ${path.join(dir, 'users.txt')}`,
    'pool_mode = transaction',
    'max_client_conn = 2000',
    'default_pool_size = 20',
    `logfile = ${path.join(dir, 'log')}`,
    `pidfile = ${path.join(dir, 'pid')}`,
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'pgbouncer.ini'), `${conf}\n`);
  // PgBouncer refuses to run as root, like PostgreSQL.
  if (isRoot) execFileSync('chown', ['-R', 'postgres:postgres', path.dirname(dir)]);
  asPostgres(findPgBouncer(), ['-d', '-q', path.join(dir, 'pgbouncer.ini')]);
  for (let i = 0; i < 100 && !fs.existsSync(path.join(dir, 'pid')); i++) spawnSync('sleep', ['0.05']);
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}

export function stopPgBouncer({ port, name = 'billing-test' }) {
  const pidFile = path.join(clusterDir(port, name), 'pgbouncer', 'pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  try {
    process.kill(pid, 'SIGINT');
    for (let i = 0; i < 100; i++) {
      process.kill(pid, 0);
      spawnSync('sleep', ['0.05']);
    }
  } catch {
    /* gone */
  }
}

/**
 * Runs one of this module's functions (`startPostgres`, `restartPostgres`, `stopPostgres`,
 * `startPgBouncer`...) in a process of its own and answers what it returned: the caller's event
 * loop keeps turning while initdb and pg_ctl run (a test's clients and servers, other setups).
 */
export function inOwnProcess(fn, options) {
  const script = `import { ${fn} } from ${JSON.stringify(import.meta.url)}; console.log(JSON.stringify(${fn}(${JSON.stringify(options)}) ?? null));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`${fn} failed (${code}): ${err || out}`))));
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [cmd, port, pgPort] = process.argv.slice(2);
  if (cmd === 'start') console.log(startPostgres({ port: Number(port ?? 24329), durable: process.env.PG_DURABLE === '1' }));
  else if (cmd === 'stop') stopPostgres({ port: Number(port ?? 24329) });
  else if (cmd === 'start-pgbouncer' && port && pgPort) console.log(startPgBouncer({ port: Number(port), pgPort: Number(pgPort) }));
  else if (cmd === 'stop-pgbouncer' && port) stopPgBouncer({ port: Number(port) });
  else console.error('usage: node scripts/pg.mjs start|stop [port] | start-pgbouncer <port> <postgres port> | stop-pgbouncer <port>');
}
