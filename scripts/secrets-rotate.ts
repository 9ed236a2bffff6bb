// npm run secrets:rotate: after APP_SECRET changed (the old one in APP_SECRET_PREVIOUS), seals
// every stored secret again under the new one. Afterwards APP_SECRET_PREVIOUS can be removed.
import { getDatabase } from '../lib/db/client';
import { appSecret, previousAppSecret } from '../lib/secrets';
import { resealStoredSecrets } from '../lib/rotate-secrets';
import { logForCommandLine } from '../lib/log';
import { loadEnv } from '../lib/env';

logForCommandLine();

try {
  loadEnv();
  appSecret();
} catch (err) {
  console.error(`secrets:rotate: ${(err as Error).message}`);
  process.exit(1);
}
if (!previousAppSecret()) console.log('APP_SECRET_PREVIOUS is not set: only values sealed before key ids existed are sealed again.');
const database = await getDatabase();
let unreadable = 0;
try {
  for (const r of await resealStoredSecrets(database.db)) {
    console.log(`${r.column}: ${r.resealed} sealed again, ${r.current} already current${r.unreadable.length ? `, ${r.unreadable.length} unreadable` : ''}`);
    for (const key of r.unreadable) console.log(`  unreadable: ${key}`);
    unreadable += r.unreadable.length;
  }
} finally {
  await database.close();
}
if (unreadable) {
  console.error(`secrets:rotate: ${unreadable} stored values open with neither APP_SECRET nor APP_SECRET_PREVIOUS; keep APP_SECRET_PREVIOUS until they are dealt with.`);
  process.exit(1);
}
console.log('Every stored secret is sealed with the current APP_SECRET: APP_SECRET_PREVIOUS can be removed.');
