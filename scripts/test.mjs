// `npm test`: lint, typecheck, the production build (once: the server, image and fault tests
// start it), unit and integration tests on PGlite and PostgreSQL, the fault scenarios, the
// failover test, and the browser tests. Runs every step, then prints one summary line.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const steps = [
  ['lint', ['node_modules/eslint/bin/eslint.js', '.', '--max-warnings=0']],
  ['typecheck', ['node_modules/typescript/bin/tsc', '--noEmit']],
  ['build', ['node_modules/next/dist/bin/next', 'build']],
  // The rest of `npm run build`: the bundled commands the image runs (the image tests use both).
  ['bundle', ['scripts/bundle.mjs']],
  ['vitest', ['node_modules/vitest/vitest.mjs', 'run', '--reporter=default', '--reporter=json', '--outputFile.json=test-results/vitest.json']],
  ['faults', ['node_modules/vitest/vitest.mjs', 'run', '--config', 'vitest.faults.config.ts', '--reporter=default', '--reporter=json', '--outputFile.json=test-results/faults.json']],
  // The primary's PostgreSQL killed twice under load on a Patroni cluster (npm run test:failover).
  ['failover', ['node_modules/vitest/vitest.mjs', 'run', '--config', 'vitest.failover.config.ts', '--reporter=default', '--reporter=json', '--outputFile.json=test-results/failover.json']],
  ['playwright', ['node_modules/@playwright/test/cli.js', 'test']],
  // Every log line the run produced, searched for secrets (scripts/scan-test-logs.ts).
  ['log-scan', ['--import', 'tsx', 'scripts/scan-test-logs.ts']],
];
const only = process.argv.slice(2);
fs.mkdirSync('test-results', { recursive: true });
for (const f of ['test-results/vitest.json', 'test-results/faults.json', 'test-results/failover.json', 'test-results/playwright.json']) fs.rmSync(f, { force: true });
if (!only.length || only.includes('vitest')) fs.rmSync('test-results/logs', { recursive: true, force: true });

const failedSteps = [];
for (const [name, args] of steps) {
  if (only.length && !only.includes(name)) continue;
  console.log(`\n=== ${name} ===`);
  const started = Date.now();
  const r = spawnSync(process.execPath, args, { stdio: 'inherit', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } });
  console.log(`=== ${name}: ${r.status === 0 ? 'ok' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(1)}s ===`);
  if (r.status !== 0) failedSteps.push(name);
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
if (failedSteps.length) console.log(`\nfailed steps: ${failedSteps.join(', ')}`);
console.log(`tests: ${passed} passed, ${failed} failed`);
process.exit(failedSteps.length ? 1 : 0);
