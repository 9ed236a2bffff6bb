// `npm test`: lint, typecheck, the production build (once: the server, image and fault tests
// start it), unit and integration tests on PGlite and PostgreSQL, the fault scenarios, the
// failover test, and the browser tests. First it makes sure the machine has what they need,
// installing what it can. Runs every step, prints how long each took, then one summary line.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { findPgBin, findPgBouncer } from './pg.mjs';

// Steps in order. Steps of one `group` run side by side (the output of its `lead` as it comes, each
// other's whole when it ends), each with ports of its own (TEST_PG_PORT, FAULTS_PG_PORT,
// HA_PORT_BASE, E2E_PORT):
// - the two checks that need no build, each on a core of its own (not beside the build: the type
//   check reads the route types the build writes into .next/types);
// - the unit and integration tests beside the fault scenarios and the failover test, which spend
//   most of their time waiting (for the faults they space out, for killed processes and databases
//   to come back) rather than computing: they use a fraction of a core (bench/README.md, "The
//   test suite");
// - then the browser tests alone, in two workers: their 15 s waits for a page are not shared with
//   the rest of the suite.
const steps = [
  ['lint', ['node_modules/eslint/bin/eslint.js', '.', '--max-warnings=0'], { group: 'checks' }],
  ['typecheck', ['node_modules/typescript/bin/tsc', '--noEmit'], { group: 'checks' }],
  ['build', ['node_modules/next/dist/bin/next', 'build']],
  // The rest of `npm run build`: the bundled commands the image runs (the image tests use both).
  ['bundle', ['scripts/bundle.mjs']],
  // A test failing once is run once more, and the end names each that passed only then (lib/testing/retry.ts).
  ['vitest', ['node_modules/vitest/vitest.mjs', 'run', '--retry=1', '--reporter=default', '--reporter=json', '--reporter=./lib/testing/flaky-reporter.ts', '--outputFile.json=test-results/vitest.json'], { group: 'tests', lead: true }],
  // A fault scenario that fails is run once more with the same FAULTS_SEED (its timing differs): the
  // end names it under "passed only when run again", with the seed and failures of its first run above.
  ['faults', ['node_modules/vitest/vitest.mjs', 'run', '--config', 'vitest.faults.config.ts', '--retry=1', '--reporter=default', '--reporter=json', '--reporter=./lib/testing/flaky-reporter.ts', '--outputFile.json=test-results/faults.json'], { group: 'tests' }],
  // The primary's PostgreSQL killed twice under load on a Patroni cluster (npm run test:failover).
  // Run once more when it fails, as the fault scenarios are: Patroni may restart a killed primary in
  // place rather than promote the standby (nothing lost, but not the failover the test is about).
  ['failover', ['node_modules/vitest/vitest.mjs', 'run', '--config', 'vitest.failover.config.ts', '--retry=1', '--reporter=default', '--reporter=json', '--reporter=./lib/testing/flaky-reporter.ts', '--outputFile.json=test-results/failover.json'], { group: 'tests' }],
  ['playwright', ['node_modules/@playwright/test/cli.js', 'test']],
  // Every log line the run produced, searched for secrets (scripts/scan-test-logs.ts).
  ['log-scan', ['--import', 'tsx', 'scripts/scan-test-logs.ts']],
];
const only = process.argv.slice(2);
const FLAKY = path.resolve('test-results/flaky.txt');
process.env.FLAKY_TESTS_FILE = FLAKY;
const wants = (...names) => !only.length || names.some((n) => only.includes(n));

/** What the steps need from the machine: Debian's package, and how to tell it is there. */
const SYSTEM = [
  { pkg: 'postgresql', what: "PostgreSQL's server binaries (the tests start their own clusters)", steps: ['vitest', 'faults'], found: () => found(findPgBin) },
  { pkg: 'pgbouncer', what: 'PgBouncer (the pgbouncer test project)', steps: ['vitest'], found: () => found(findPgBouncer) },
  { pkg: 'chromium', what: 'Chromium (the browser tests)', steps: ['playwright'], found: () => fs.existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium') },
  // The failover test runs PostgreSQL under Patroni, with etcd as its consensus store (scripts/ha-cluster.mjs).
  { pkg: 'patroni', what: 'Patroni (the failover test)', steps: ['failover'], found: () => onPath('patroni') },
  { pkg: 'etcd-server', what: 'etcd (the failover test)', steps: ['failover'], found: () => onPath('etcd') },
];

/** Where scripts/ha-cluster.mjs looks for Patroni and etcd. */
const onPath = (name) => ['/usr/bin', '/usr/local/bin', '/usr/sbin'].some((d) => fs.existsSync(`${d}/${name}`));

function found(find) {
  try {
    find();
    return true;
  } catch {
    return false;
  }
}

const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0;
const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/**
 * Installs the missing system packages where this user can (root, or sudo without a password),
 * or stops before any step with the one command that would.
 */
function ensureSystemPackages() {
  const missing = SYSTEM.filter((p) => wants(...p.steps) && !p.found());
  if (!missing.length) return;
  const pkgs = missing.map((p) => p.pkg);
  const command = `apt-get install -y ${pkgs.join(' ')}`;
  console.log(`npm test needs ${missing.map((p) => p.what).join(', ')}.`);
  const asRoot = process.getuid?.() === 0;
  const sudo = !asRoot && has('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
  if (has('apt-get') && (asRoot || sudo)) {
    console.log(`Installing: ${pkgs.join(' ')}`);
    const prefix = sudo ? ['sudo', '-n', 'env', 'DEBIAN_FRONTEND=noninteractive'] : [];
    const apt = (...args) => (prefix.length ? run(prefix[0], [...prefix.slice(1), 'apt-get', ...args]) : run('apt-get', args));
    if (apt('update', '-qq') && apt('install', '-y', '-qq', ...pkgs) && !SYSTEM.some((p) => pkgs.includes(p.pkg) && !p.found())) return;
    console.log('The installation did not finish.');
  }
  const how = has('apt-get') ? `${asRoot ? '' : 'sudo '}${command}` : `install ${pkgs.join(', ')} with the system's package manager (or set PG_BIN, PGBOUNCER_BIN, CHROMIUM_PATH)`;
  console.log(`Run this, then npm test again:\n\n  ${how}\n`);
  fs.mkdirSync('test-results', { recursive: true });
  fs.writeFileSync('test-results/summary.txt', 'tests: 0 passed, 1 failed\n');
  console.log('tests: 0 passed, 1 failed');
  process.exit(1);
}

/** The project's own packages, as the lock file pins them, when they are not installed yet. */
function ensureNodeModules() {
  const marker = 'node_modules/.package-lock.json';
  if (fs.existsSync(marker) && fs.statSync(marker).mtimeMs >= fs.statSync('package-lock.json').mtimeMs) return;
  console.log('Installing the packages of package-lock.json (npm ci)');
  // npm ci refuses lock files that leave out other platforms' optional packages (npm 11);
  // npm install still installs exactly the locked versions.
  if (run('npm', ['ci', '--no-audit', '--no-fund']) || run('npm', ['install', '--no-audit', '--no-fund'])) return;
  fs.mkdirSync('test-results', { recursive: true });
  fs.writeFileSync('test-results/summary.txt', 'tests: 0 passed, 1 failed\n');
  console.log('npm ci failed: fix the error above (network, disk), then npm test again.\ntests: 0 passed, 1 failed');
  process.exit(1);
}

ensureSystemPackages();
ensureNodeModules();
fs.mkdirSync('test-results', { recursive: true });
for (const f of ['test-results/vitest.json', 'test-results/faults.json', 'test-results/failover.json', 'test-results/playwright.json', FLAKY]) fs.rmSync(f, { force: true });
if (!only.length || only.includes('vitest')) fs.rmSync('test-results/logs', { recursive: true, force: true });

const failedSteps = [];
const took = [];
const allStarted = Date.now();

/** Runs one step to its end; its output is kept and printed whole when `quiet` (a step running beside another). */
function runStep(name, args, { quiet = false } = {}) {
  return new Promise((resolve) => {
    const started = Date.now();
    // The build need not check again the types the typecheck step has just checked (next.config.mjs).
    const typesChecked = name === 'build' && took.some((t) => t.startsWith('typecheck ')) && !failedSteps.includes('typecheck');
    const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1', ...(typesChecked && { BILLING_TYPES_CHECKED: '1' }) };
    const child = spawn(process.execPath, args, { stdio: quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit', env });
    let out = '';
    if (quiet) {
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
    }
    child.on('close', (code) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      if (quiet) console.log(`\n=== ${name} ===\n${out.trimEnd()}`);
      console.log(`=== ${name}: ${code === 0 ? 'ok' : 'FAILED'} in ${seconds}s ===`);
      took.push(`${name} ${seconds}s`);
      if (code !== 0) failedSteps.push(name);
      resolve();
    });
  });
}

const selected = steps.filter(([name]) => !only.length || only.includes(name));
for (let i = 0; i < selected.length; ) {
  const [name, args, opts] = selected[i];
  let end = i + 1;
  while (opts?.group && end < selected.length && selected[end][2]?.group === opts.group) end++;
  if (end - i > 1) {
    const together = selected.slice(i, end);
    // One step's output as it comes (the first, unless one is the group's lead), the others' when they end.
    const shown = together.find(([, , o]) => o?.lead) ?? together[0];
    const rest = together.filter((t) => t !== shown).map(([n]) => n);
    console.log(`\n=== ${together.map(([n]) => n).join(' ‖ ')} (side by side; ${shown[0]}'s output as it comes, that of ${rest.join(' and ')} when each ends) ===`);
    await Promise.all(together.map((t) => runStep(t[0], t[1], { quiet: t !== shown })));
  } else {
    console.log(`\n=== ${name} ===`);
    await runStep(name, args);
  }
  i = end;
}
console.log(`\nsteps: ${took.join(', ')}; all ${((Date.now() - allStarted) / 1000).toFixed(1)}s`);

/** Each failed test as "file > title: first line of its message", so the end of a long log names what failed. */
function failedTests() {
  const lines = [];
  const colors = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
  const first = (m) => String(m ?? '').replace(colors, '').split('\n').find((l) => l.trim()) ?? '';
  for (const f of ['test-results/vitest.json', 'test-results/faults.json', 'test-results/failover.json']) {
    try {
      const v = JSON.parse(fs.readFileSync(f, 'utf8'));
      for (const file of v.testResults) {
        const name = path.relative(process.cwd(), file.name);
        for (const a of file.assertionResults) {
          if (a.status === 'failed') lines.push(`${name} > ${a.fullName ?? a.title}: ${first(a.failureMessages?.[0]).slice(0, 300)}`);
        }
        if (file.status === 'failed' && !file.assertionResults.some((a) => a.status === 'failed')) lines.push(`${name}: ${first(file.message).slice(0, 300)}`);
      }
    } catch {
      /* step not run or crashed */
    }
  }
  try {
    const p = JSON.parse(fs.readFileSync('test-results/playwright.json', 'utf8'));
    const walk = (suite) => {
      for (const spec of suite.specs ?? []) {
        for (const t of spec.tests ?? []) {
          if (t.status === 'unexpected') lines.push(`${spec.file}:${spec.line} > ${spec.title}: ${first(t.results?.at(-1)?.error?.message).slice(0, 300)}`);
        }
      }
      for (const s of suite.suites ?? []) walk(s);
    };
    for (const s of p.suites ?? []) walk(s);
  } catch {
    /* step not run or crashed */
  }
  return lines;
}

let passed = 0;
let failed = 0;
for (const f of ['test-results/vitest.json', 'test-results/faults.json', 'test-results/failover.json']) {
  try {
    const v = JSON.parse(fs.readFileSync(f, 'utf8'));
    passed += v.numPassedTests;
    failed += v.numFailedTests;
  } catch {
    /* step not run or crashed */
  }
}
try {
  const p = JSON.parse(fs.readFileSync('test-results/playwright.json', 'utf8'));
  passed += p.stats.expected + (p.stats.flaky ?? 0);
  failed += p.stats.unexpected;
} catch {
  /* step not run or crashed */
}
// A failed step that produced no test counts (lint, typecheck, build, a crash) counts as one failure.
for (const s of failedSteps) {
  if (s === 'vitest' || s === 'faults' || s === 'failover' || s === 'playwright') {
    const counted = fs.existsSync(`test-results/${s}.json`);
    if (counted && failed > 0) continue;
  }
  failed += 1;
}
fs.writeFileSync('test-results/summary.txt', `tests: ${passed} passed, ${failed} failed\n`);
const flaky = fs.existsSync(FLAKY) ? fs.readFileSync(FLAKY, 'utf8').trim() : '';
if (flaky) console.log(`\npassed only when run again:\n${flaky.split('\n').map((l) => `  ${l}`).join('\n')}`);
const failures = failedTests();
if (failures.length) console.log(`\nfailed tests:\n${failures.map((f) => `  ${f}`).join('\n')}`);
if (failedSteps.length) console.log(`\nfailed steps: ${failedSteps.join(', ')}`);
console.log(`tests: ${passed} passed, ${failed} failed`);
process.exit(failedSteps.length ? 1 : 0);
