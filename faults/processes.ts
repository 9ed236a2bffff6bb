import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
// @ts-expect-error plain ESM helper shared with the tests and benchmarks
import { inOwnProcess, startPostgres, stopPostgres } from '../scripts/pg.mjs';

export const root = path.resolve(__dirname, '..');

/** Every fault the run caused, by kind: the suite asserts their number. */
export const kills = { app_group: 0, app: 0, worker: 0, postgres: 0 };
export const totalKills = () => kills.app_group + kills.app + kills.worker + kills.postgres;

const live = new Set<Proc>();
// A test process that dies must not leave servers behind (they run in process groups of their own).
process.once('exit', () => {
  for (const p of live) p.signalGroup('SIGKILL');
});

const OUTPUT_LIMIT = 200_000;

/** A child in a process group of its own, so a kill -9 reaches every process it started. */
export class Proc {
  readonly child: ChildProcess;
  readonly exited: Promise<number | string>;
  private out = '';

  constructor(
    readonly name: string,
    args: string[],
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, args, { cwd: root, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const keep = (d: Buffer) => {
      this.out += d;
      if (this.out.length > OUTPUT_LIMIT) this.out = this.out.slice(-OUTPUT_LIMIT / 2);
    };
    this.child.stdout!.on('data', keep);
    this.child.stderr!.on('data', keep);
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    live.add(this);
    void this.exited.then(() => live.delete(this));
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  output(): string {
    return this.out;
  }

  signalGroup(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, signal);
    } catch {
      /* the group is gone */
    }
  }

  /** kill -9 of the whole process group; resolves once no process of the group is left. */
  async killGroup(): Promise<void> {
    this.signalGroup('SIGKILL');
    await this.exited;
    for (let i = 0; i < 200 && groupAlive(this.pid); i++) await sleep(25);
    if (groupAlive(this.pid)) throw new Error(`${this.name}: processes of group ${this.pid} survived SIGKILL`);
  }

  /** SIGTERM, as an orchestrator stops it; SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 15_000): Promise<number | string> {
    if (!this.running) return this.exited;
    this.signalGroup('SIGTERM');
    const timer = setTimeout(() => this.signalGroup('SIGKILL'), graceMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The test runner's own settings stay out of the processes under test. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('VITEST') || k === 'NODE_ENV' || k === 'TEST_DB') delete env[k];
  return { ...env, NEXT_TELEMETRY_DISABLED: '1', ...extra };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, proc: Proc, ok: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (!proc.running) throw new Error(`${proc.name} exited (${await proc.exited}) before ${what}:\n${proc.output().slice(-5000)}`);
    if (Date.now() > end) throw new Error(`${proc.name}: timed out waiting for ${what}:\n${proc.output().slice(-5000)}`);
    await sleep(50);
  }
}

export function requireBuild(): void {
  if (!fs.existsSync(path.join(root, '.next/BUILD_ID')) || !fs.existsSync(path.join(root, 'dist/worker.mjs'))) {
    throw new Error('run `npm run build` first: the fault tests start the built server (scripts/serve.mjs) and worker (dist/worker.mjs)');
  }
}

/** `scripts/serve.mjs` (the production launcher) on a fixed port, so a restart answers where the old one did. */
export class App {
  proc: Proc | null = null;
  readonly url: string;

  constructor(
    readonly name: string,
    readonly port: number,
    private env: Record<string, string>,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    // Whatever else answers on the port would pass for this process.
    if (await answers(this.url)) throw new Error(`${this.name}: port ${this.port} is taken by another server`);
    const proc = new Proc(this.name, [path.join(root, 'scripts/serve.mjs')], { ...this.env, PORT: String(this.port), HOSTNAME: '127.0.0.1' });
    this.proc = proc;
    await until('readiness', proc, async () => {
      try {
        return (await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(2_000) })).status === 200;
      } catch {
        return false;
      }
    });
  }

  /** kill -9 of the launcher's process group (the launcher and every serving process). */
  async kill(): Promise<void> {
    await this.proc?.killGroup();
  }

  async stop(): Promise<void> {
    await this.proc?.stop();
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(`${url}/livez`, { signal: AbortSignal.timeout(2_000) });
    return true;
  } catch {
    return false;
  }
}

/** `dist/worker.mjs`, the worker the image runs. */
export class Worker {
  proc: Proc | null = null;

  constructor(
    readonly name: string,
    private env: Record<string, string>,
  ) {}

  async start(): Promise<void> {
    const proc = new Proc(this.name, [path.join(root, 'dist/worker.mjs')], this.env);
    this.proc = proc;
    await until('its start', proc, () => proc.output().includes('worker running'));
  }

  async kill(): Promise<void> {
    await this.proc?.killGroup();
  }

  async stop(): Promise<void> {
    await this.proc?.stop();
  }
}

/**
 * A throwaway PostgreSQL cluster whose commits survive a crash of its processes (every commit
 * is written to the kernel before it is acknowledged): an immediate stop must lose nothing
 * that was committed, so a lost row is the service's fault. It does not wait for the disk,
 * which only a crash of the machine would need.
 */
export class Cluster {
  constructor(
    readonly port: number,
    readonly name = 'billing-faults',
  ) {}

  start(): string {
    return startPostgres({ port: this.port, durable: 'process', name: this.name });
  }

  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** An immediate stop: every backend is killed without a checkpoint, as in a crash. */
  crash(): Promise<void> {
    return this.pg('stopPostgres');
  }

  /** Starts again on the same data: crash recovery replays the write-ahead log. */
  restart(): Promise<void> {
    return this.pg('restartPostgres');
  }

  stop(): void {
    stopPostgres({ port: this.port, name: this.name });
  }

  // pg_ctl runs in a process of its own: the test's event loop (clients, the local Stripe
  // server, the webhook receiver) keeps turning while PostgreSQL goes down and recovers.
  private async pg(fn: 'stopPostgres' | 'restartPostgres'): Promise<void> {
    await inOwnProcess(fn, { port: this.port, durable: 'process', name: this.name });
  }
}
