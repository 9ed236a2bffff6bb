// Runs after `npm install` / `npm ci` (package.json "postinstall"): repairs a defect of the
// PostgreSQL driver (postgres 3.4.9, no release fixes it yet) that a failover sets off.
//
// postgres.js batches small writes behind a setImmediate and schedules one only while its timer
// variable is null; only the write itself sets it back to null. When a connection's socket closes
// while a write is waiting (a primary killed under load), `closed()` and `terminate()` cancel the
// timer without clearing the variable: every later connection made on that slot of the pool never
// sends its start-up message and fails after connect_timeout (30 s), for good. And a write left
// waiting after the socket was dropped throws from the timer, which ends the process. The repair
// clears the variable and the buffered bytes where the timer is cancelled, and settles a write
// that finds no socket with CONNECTION_CLOSED. lib/db/hosts.test.ts pins both.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MARK = '/* billing: write timer cleared */';
const dir = path.join(root, 'node_modules', 'postgres');

function patchConnection(file) {
  let text = fs.readFileSync(file, 'utf8');
  if (text.includes(MARK)) return 'already';
  const cancels = text.match(/^ {4}clearImmediate\(nextWriteTimer\)$/gm) ?? [];
  const next = '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)';
  if (cancels.length !== 2 || !text.includes(next)) return 'unknown';
  text = text.replace(/^ {4}clearImmediate\(nextWriteTimer\)$/gm, `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null ${MARK}`);
  text = text.replace(
    next,
    "  function nextWrite(fn) {\n    if (!socket) {\n      chunk = nextWriteTimer = null\n      error(Errors.connection('CONNECTION_CLOSED', options))\n      return false\n    }\n    const x = socket.write(chunk, fn)",
  );
  fs.writeFileSync(file, text);
  return 'patched';
}

if (fs.existsSync(dir)) {
  const { version } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const outcomes = ['src', 'cjs/src', 'cf/src'].map((d) => path.join(dir, d, 'connection.js')).filter((f) => fs.existsSync(f)).map((f) => [f, patchConnection(f)]);
  const unknown = outcomes.filter(([, o]) => o === 'unknown');
  if (unknown.length) {
    // Another version: its code is not what the repair expects. Say so; lib/db/hosts.test.ts
    // tells whether it still needs one.
    console.warn(`patch-dependencies: postgres ${version} is not the code the repair was written for (${unknown.map(([f]) => path.relative(root, f)).join(', ')}); left as it is.`);
  } else if (outcomes.some(([, o]) => o === 'patched')) {
    console.log(`patch-dependencies: postgres ${version}: write timer cleared on close (${outcomes.length} builds)`);
  }
}
