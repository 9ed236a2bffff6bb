// npm run company:create -- --name N --email E [--processor-key -] [--publishable-key pk_...] [--password -]
// `-` reads the secret from standard input, one line each, the password first: a secret written on
// the command line is visible to every user of the machine (ps) and kept in the shell's history.
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { getDatabase } from '../lib/db/client';
import { companyCreate } from '../lib/api/schemas/companies';
import { createCompany, refuseLiveKeysOffStripe, serializeCompany } from '../lib/billing/companies/companies';
import { describeIssue } from '../lib/api/zod-errors';
import { appSecret } from '../lib/config';
import { ApiError } from '../lib/errors';
import { logForCommandLine } from '../lib/log';
import { loadEnv } from '../lib/env';

logForCommandLine();

const { values } = parseArgs({
  options: {
    name: { type: 'string' },
    email: { type: 'string' },
    'processor-key': { type: 'string' },
    'publishable-key': { type: 'string' },
    password: { type: 'string' },
    json: { type: 'boolean' },
  },
});

// The secrets given as `-`, from standard input; those written out are still taken, with a warning.
const fromStdin = (['password', 'processor-key'] as const).filter((name) => values[name] === '-');
if (fromStdin.length) {
  const lines = fs.readFileSync(0, 'utf8').split(/\r?\n/);
  fromStdin.forEach((name, i) => (values[name] = lines[i] ?? ''));
}
for (const name of ['password', 'processor-key'] as const) {
  if (values[name] !== undefined && !fromStdin.includes(name)) {
    console.error(`company:create: warning: --${name} on the command line is visible to other users of this machine and kept in shell history; pass --${name} - to read it from standard input`);
  }
}

const flag = (message: string) => message.replace(/processor_key/g, '--processor-key').replace(/processor_publishable_key/g, '--publishable-key');

const parsed = companyCreate.safeParse({
  name: values.name,
  email: values.email,
  processor_key: values['processor-key'],
  processor_publishable_key: values['publishable-key'],
  password: values.password,
});
if (!parsed.success) {
  const { message } = describeIssue(parsed.error.issues[0]);
  console.error(`company:create: ${flag(message)}`);
  console.error('usage: npm run company:create -- --name NAME --email EMAIL [--processor-key -] [--publishable-key pk_...] [--password -]   (- reads it from standard input, a line each, the password first)');
  process.exit(2);
}
try {
  loadEnv();
  appSecret();
} catch (err) {
  console.error(`company:create: ${(err as Error).message}`);
  process.exit(1);
}
try {
  // Before the database is opened: a refused key needs none.
  refuseLiveKeysOffStripe(parsed.data);
} catch (err) {
  if (!(err instanceof ApiError)) throw err;
  console.error(`company:create: ${flag(err.message)}`);
  process.exit(2);
}
const database = await getDatabase();
let created: Awaited<ReturnType<typeof createCompany>>;
try {
  created = await createCompany({ db: database.db, input: parsed.data });
} catch (err) {
  await database.close();
  if (!(err instanceof ApiError)) throw err;
  console.error(`company:create: ${flag(err.message)}`);
  process.exit(2);
}
const { company, apiKey } = created;
if (values.json) {
  console.log(JSON.stringify({ ...serializeCompany(company), api_key: apiKey }));
} else {
  console.log(`company id: ${company.id}\nAPI key:    ${apiKey}   (shown once; store it now)`);
}
await database.close();
