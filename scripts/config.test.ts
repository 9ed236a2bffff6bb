import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_NAMES } from '../lib/env';
import { keepOutput, startAppServer } from '../lib/testing/servers';

const root = path.resolve(__dirname, '..');

/** The variables the README's configuration table documents, in its first column. */
function documentedVariables(): string[] {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Configuration\n'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('|')));
  const names: string[] = [];
  for (const line of table.split('\n')) {
    if (!line.startsWith('| `')) continue;
    const first = line.split('|')[1];
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.push(m[1]);
  }
  return names;
}

/** The service's own source files (not its tests, test helpers, benchmarks or development tools). */
function serviceSources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (rel !== path.join('lib', 'testing')) walk(rel);
      } else if (/\.(ts|tsx|mjs)$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) && !/bench\.ts$/.test(e.name)) out.push(rel);
    }
  };
  for (const dir of ['lib', 'app', 'components']) walk(dir);
  out.push('instrumentation.ts', 'proxy.ts', 'next.config.mjs');
  for (const file of ['serve.mjs', 'start.mjs', 'worker.ts', 'migrate.ts', 'company-create.ts', 'secrets-rotate.ts']) out.push(path.join('scripts', file));
  return out;
}

// Handshakes with Next.js, between our own launcher and the server, and between `npm test` and
// the build (its types were just checked), and vitest's own mark that only the test runner may
// lower the password cost (\`setPasswordCostForTests\`, which nothing but the tests calls): not settings.
const INTERNAL = new Set(['NEXT_RUNTIME', 'NEXT_MANUAL_SIG_HANDLE', 'BILLING_TYPES_CHECKED', 'VITEST']);

/** Runs a command of the repository to its end with `env` added to the test's environment. */
function run(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<{ status: number | string; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    keepOutput(child, () => out);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ status: code ?? signal ?? -1, output: out });
    });
  });
}

describe('the configuration', () => {
  it('is documented in the README exactly: every variable the schema reads, and nothing it does not', () => {
    const documented = documentedVariables();
    expect(documented.length).toBeGreaterThan(20);
    expect(new Set(documented).size, 'a variable documented twice').toBe(documented.length);
    expect([...documented].sort()).toEqual([...ENV_NAMES].sort());
  });

  it('is read only through the schema: no service code reads process.env for a setting', () => {
    const reads: string[] = [];
    const files = serviceSources();
    expect(files).toContain(path.join('lib', 'env.ts'));
    for (const file of files) {
      if (file === path.join('lib', 'env.ts')) continue;
      const text = fs.readFileSync(path.join(root, file), 'utf8');
      for (const m of text.matchAll(/process\.env(?:\.([A-Za-z_$][\w$]*)|\s*\[)(\s*=(?!=))?/g)) {
        const [, name, assigned] = m;
        if (assigned || (name && INTERNAL.has(name))) continue;
        reads.push(`${file}: ${m[0]}`);
      }
    }
    expect(reads).toEqual([]);
  });
});

describe('a wrong value stops the start, naming the variable and what it expects', () => {
  const common = { APP_SECRET: 'config-test-secret-of-at-least-32-bytes-01', STRIPE_API_URL: '', ADMIN_TOKEN: 'config-admin-token-0123' };
  // Never connected to: the configuration is refused before anything opens.
  const postgres = { DATABASE_URL: 'postgres://billing@127.0.0.1:9/billing' };

  it('the server (scripts/serve.mjs), before it forks or listens', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'config-serve-'));
    try {
      const r = await run(['scripts/serve.mjs'], { ...common, DATA_DIR: dir, WORKER_INTERVAL_MS: 'abc' });
      expect(r.status, r.output).toBe(2);
      expect(r.output).toContain('WORKER_INTERVAL_MS must be a whole number of milliseconds, 10 to 2147483647; got \\"abc\\".');
      const many = await run(['scripts/serve.mjs'], { ...common, ...postgres, WEB_CONCURRENCY: '2', RATE_LIMIT_PER_SECOND: 'abc', METRICS_TOKEN: 'tiny secret' });
      expect(many.status, many.output).toBe(2);
      expect(many.output).toContain('RATE_LIMIT_PER_SECOND must be a whole number of requests per second (0 turns the limit off); got \\"abc\\".');
      expect(many.output).toContain('METRICS_TOKEN must be at least 16 printable ASCII characters');
      expect(many.output).not.toContain('tiny secret');
      expect(many.output).not.toMatch(/serving process \d+ started/);
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the built application started by Next.js itself (its instrumentation hook)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'config-next-'));
    try {
      await expect(startAppServer({ ...common, DATA_DIR: dir, PUBLIC_RATE_LIMIT_PER_MINUTE: 'abc' })).rejects.toThrow(
        /PUBLIC_RATE_LIMIT_PER_MINUTE must be a whole number of requests per minute \(0 turns the limit off\); got \\"abc\\"/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the worker', async () => {
    const r = await run(['--import', 'tsx', 'scripts/worker.ts'], { ...common, ...postgres, WORKER_INTERVAL_MS: 'abc', WEBHOOK_LOG_RETENTION_DAYS: '-5' });
    expect(r.status, r.output).toBe(2);
    expect(r.output).toContain('WORKER_INTERVAL_MS must be a whole number of milliseconds, 10 to 2147483647; got \\"abc\\".');
    expect(r.output).toContain('WEBHOOK_LOG_RETENTION_DAYS must be a whole number of days, 1 to 36500; got \\"-5\\".');
    expect(r.output).not.toMatch(/worker running/);
  });

  it('db:migrate', async () => {
    const r = await run(['--import', 'tsx', 'scripts/migrate.ts'], { ...common, APP_SECRET: '', ...postgres, DATABASE_PREPARE: 'off' });
    expect(r.status, r.output).toBe(2);
    expect(r.output).toContain('db:migrate: DATABASE_PREPARE must be 0 (send statements unprepared) or 1; got "off".');
  });

  it('npm start, before it builds or starts anything', async () => {
    const r = await run(['scripts/start.mjs'], { ...common, PORT: 'eighty' });
    expect(r.status, r.output).toBe(2);
    expect(r.output).toContain('npm start: PORT must be a TCP port number (0 to 65535); got "eighty".');
    expect(r.output).not.toMatch(/Building|Stripe/);
  });
});
