// The last step of `npm test`: searches every log line the test run produced (the service's own
// processes under vitest, and every server the tests started: test-results/logs) for secrets.
// A line holding an API key, a processor key, a card token, a webhook secret, Basic or Bearer
// credentials, or the tests' APP_SECRET fails the run. Plain-text output (the demo banner, the
// bundled local Stripe server) is not a log line and is not searched here.
import fs from 'node:fs';
import path from 'node:path';
import { findSecrets, logLines } from '../lib/testing/log-scan';

const dir = path.resolve(import.meta.dirname, '../test-results/logs');
// vitest.config.ts gives the tests this APP_SECRET; the browser tests' server has this operator token (e2e/companies.ts).
const known = { 'app secret': 'test-secret-of-at-least-32-bytes-0123456789', 'operator token': 'e2e-operator-token-of-this-run' };

const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.log')) : [];
let lines = 0;
let leaks = 0;
for (const file of files) {
  const text = logLines(fs.readFileSync(path.join(dir, file), 'utf8'));
  lines += text ? text.split('\n').length : 0;
  for (const leak of findSecrets(text, known)) {
    leaks++;
    if (leaks <= 20) console.log(`${file}:${leak.line}: ${leak.kind}: ${leak.match.slice(0, 12)}…`);
  }
}
console.log(`log scan: ${lines} log lines in ${files.length} files, ${leaks} secrets found`);
if (!files.length || !lines) {
  console.log('log scan: no log lines to search (run vitest first)');
  process.exit(1);
}
process.exit(leaks ? 1 : 0);
