import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { inject } from 'vitest';
import { openPostgres } from '../db/client';
import { freePort, keepOutput } from './servers';
import { clonePostgresTemplate, databaseUrl } from './templates';

/**
 * What the container image holds, without a container daemon: the Dockerfile's runtime stage is
 * read (its ENV, its COPY lines, its CMD) and a directory is assembled with exactly what it copies
 * from the build, to be started with plain node, far from the repository's node_modules.
 */
export const root = path.resolve(__dirname, '../..');

export type Copy = { stage: string; from: string | null; sources: string[]; dest: string };
export type Stage = { name: string; workdir: string; env: Record<string, string>; copies: Copy[]; cmd: string[] | null; healthcheck: string[] | null };

/** The Dockerfile's stages, with continuation lines joined. */
export function readDockerfile(file = path.join(root, 'Dockerfile')): Stage[] {
  const lines = fs
    .readFileSync(file, 'utf8')
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [instruction, ...rest] = line.split(/\s+/);
    const args = line.slice(instruction.length).trim();
    const stage = stages[stages.length - 1];
    switch (instruction.toUpperCase()) {
      case 'FROM': {
        const m = /\bAS\s+(\S+)/i.exec(args);
        stages.push({ name: m?.[1] ?? String(stages.length), workdir: '/', env: {}, copies: [], cmd: null, healthcheck: null });
        break;
      }
      case 'WORKDIR':
        stage.workdir = path.posix.resolve(stage.workdir, args);
        break;
      case 'ENV':
        for (const m of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) stage.env[m[1]] = m[2].replace(/^"|"$/g, '');
        break;
      case 'COPY': {
        const flags = rest.filter((a) => a.startsWith('--'));
        const paths = rest.filter((a) => !a.startsWith('--'));
        const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length) ?? null;
        stage.copies.push({ stage: stage.name, from, sources: paths.slice(0, -1), dest: paths[paths.length - 1] });
        break;
      }
      case 'CMD':
        stage.cmd = JSON.parse(args) as string[];
        break;
      case 'HEALTHCHECK': {
        // HEALTHCHECK [--option=value ...] CMD ["exec", "form"]
        const m = /^(?:--\S+\s+)*CMD\s+(\[.*\])$/i.exec(args);
        if (!m) throw new Error(`HEALTHCHECK ${args}: only the exec form (CMD [...]) is read`);
        stage.healthcheck = JSON.parse(m[1]) as string[];
        break;
      }
    }
  }
  return stages;
}

/** Where a path of the build stage is in the repository (the build stage copies the repository to its WORKDIR). */
export function buildPathInRepo(stages: Stage[], from: string, source: string): string {
  const build = stages.find((s) => s.name === from);
  if (!build) throw new Error(`COPY --from=${from}: no such stage`);
  const rel = path.posix.relative(build.workdir, path.posix.resolve(build.workdir, source));
  if (rel.startsWith('..')) throw new Error(`COPY --from=${from} ${source}: outside the build stage's WORKDIR`);
  return path.join(root, rel);
}

export function runtimeStage(stages = readDockerfile()): Stage {
  return stages[stages.length - 1];
}

/** A directory holding exactly what the runtime stage copies, laid out as in the image's WORKDIR. */
export function assembleImage(): string {
  if (!fs.existsSync(path.join(root, '.next/standalone/server.js')) || !fs.existsSync(path.join(root, 'dist'))) {
    throw new Error('run `npm run build` first (npm test builds and bundles before the image tests)');
  }
  const stages = readDockerfile();
  const runtime = runtimeStage(stages);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-image-'));
  for (const copy of runtime.copies) {
    if (!copy.from) throw new Error(`the runtime stage copies ${copy.sources.join(' ')} from the build context, not from the build`);
    const destInImage = path.posix.resolve(runtime.workdir, copy.dest);
    const rel = path.posix.relative(runtime.workdir, destInImage);
    if (rel.startsWith('..')) throw new Error(`COPY to ${copy.dest}: outside the WORKDIR, not assembled`);
    const dest = path.join(dir, rel);
    for (const source of copy.sources) {
      const src = buildPathInRepo(stages, copy.from, source);
      if (fs.statSync(src).isDirectory()) {
        // Docker copies a directory's contents into the destination.
        fs.mkdirSync(dest, { recursive: true });
        fs.cpSync(src, dest, { recursive: true });
      } else {
        const target = copy.dest.endsWith('/') ? path.join(dest, path.basename(src)) : dest;
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.copyFileSync(src, target);
      }
    }
  }
  return dir;
}

/** The image's environment (its ENV lines), plus what the host needs to run node, plus `extra`. */
export function imageEnv(extra: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.tmpdir(), ...runtimeStage().env, ...extra };
}

export type Proc = {
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  signal: (name: NodeJS.Signals) => void;
};

/** Starts a command in the assembled image directory, as the container would. */
export function startInImage(dir: string, command: string[], env: Record<string, string>): Proc {
  const [bin, ...args] = command as [string, ...string[]];
  const child: ChildProcess = spawn(bin === 'node' ? process.execPath : bin, args, { cwd: dir, env: imageEnv(env) as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  keepOutput(child, () => out);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return {
    child,
    output: () => out,
    exited,
    signal: (name) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(name);
    },
  };
}

/** Runs a command in the image directory to its end. */
export async function runInImage(dir: string, command: string[], env: Record<string, string>, timeoutMs = 60_000) {
  const proc = startInImage(dir, command, env);
  const timer = setTimeout(() => proc.signal('SIGKILL'), timeoutMs);
  const status = await proc.exited;
  clearTimeout(timer);
  return { status, output: proc.output() };
}

/** Polls `url` until it answers `status` (200 by default). */
export async function waitFor(url: string, proc?: Proc, status = 200, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < until) {
    if (proc && (proc.child.exitCode !== null || proc.child.signalCode !== null)) throw new Error(`exited before ${url} answered:\n${proc.output()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      last = `${res.status} ${await res.text()}`;
      if (res.status === status) return;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer ${status} (last: ${last})\n${proc?.output() ?? ''}`);
}

/** The image's server (its CMD) on a free port of 127.0.0.1; resolves once /livez answers. */
export async function startServer(dir: string, env: Record<string, string>): Promise<Proc & { url: string }> {
  const port = await freePort();
  const proc = startInImage(dir, runtimeStage().cmd!, { PORT: String(port), HOSTNAME: '127.0.0.1', ...env });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/livez`, proc);
  return { ...proc, url };
}

/** A new, empty database on the test cluster (nothing migrated); returns its URL. */
export async function emptyPostgresDatabase(): Promise<string> {
  const name = `img_${randomBytes(6).toString('hex')}`;
  const admin = await openPostgres(inject('postgresAdminUrl'), { max: 1, migrate: false });
  await admin.db.execute(sql.raw(`create database ${name}`));
  await admin.close();
  return databaseUrl(inject('postgresUrl'), name);
}

/**
 * A new database on the test cluster cloned from the migrated template; returns its URL. For a
 * server whose subject is not the migrations (scripts/image.test.ts runs them from nothing).
 */
export async function migratedPostgresDatabase(): Promise<string> {
  return databaseUrl(inject('postgresUrl'), await clonePostgresTemplate(inject('postgresAdminUrl'), 'img'));
}

/** Stops a process with SIGTERM and returns its exit code. */
export async function stop(proc: Proc): Promise<number | string> {
  proc.signal('SIGTERM');
  return proc.exited;
}
