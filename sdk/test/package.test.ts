import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSdkPackage, tsc } from './package';

type Manifest = {
  name: string;
  private?: boolean;
  type: string;
  exports: Record<string, { types: string; default: string } | string>;
  main: string;
  types: string;
  engines: { node: string };
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
};

// The package is the same whatever the database: built and checked once.
describe('the @billing/sdk package', () => {
  let consumer: string;
  let pkg: string;
  let manifest: Manifest;
  beforeAll(() => {
    ({ consumer, pkg } = buildSdkPackage());
    manifest = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')) as Manifest;
  }, 120_000);
  afterAll(() => {
    if (consumer) fs.rmSync(consumer, { recursive: true, force: true });
  });

  it('builds with its own tsconfig and publishes its entry points, types and build output', () => {
    expect(manifest.name).toBe('@billing/sdk');
    expect(manifest.private).toBeUndefined();
    expect(manifest.type).toBe('module');
    expect(manifest.engines.node).toBe('>=18');
    const entry = manifest.exports['.'] as { types: string; default: string };
    for (const file of [entry.types, entry.default, manifest.main, manifest.types]) expect(fs.existsSync(path.join(pkg, file)), file).toBe(true);
    expect(fs.existsSync(path.join(pkg, 'README.md'))).toBe(true);
  });

  it('depends on nothing at run time: no dependencies, and the built code imports only its own files', () => {
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.peerDependencies ?? {}).toEqual({});
    expect(manifest.optionalDependencies ?? {}).toEqual({});
    const dist = path.join(pkg, 'dist');
    for (const file of fs.readdirSync(dist).filter((f) => f.endsWith('.js'))) {
      const code = fs.readFileSync(path.join(dist, file), 'utf8');
      for (const m of code.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"\n]*?from\s*['"]([^'"]+)['"]/g)) expect(m[1], `${file} imports ${m[1]}`).toMatch(/^\.\/[\w-]+\.js$/);
      // Node's WebCrypto is reached only where the platform has no global one (Node 18), by a
      // name bundlers do not follow.
      for (const m of code.matchAll(/\bimport\(([^)]*)\)/g)) expect(m[1], file).toMatch(/NODE_CRYPTO/);
      expect(code, file).not.toMatch(/\brequire\(/);
    }
  });

  it('imports in plain Node as an installed package would', () => {
    const script = path.join(consumer, 'consumer.mjs');
    fs.writeFileSync(
      script,
      `import * as sdk from '@billing/sdk';
const billing = new sdk.Billing({ baseUrl: 'http://127.0.0.1:9', companyId: 'c_1', apiKey: 'sk_1' });
console.log(JSON.stringify({
  exports: Object.keys(sdk).sort(),
  groups: Object.keys(billing).filter((k) => typeof billing[k] === 'object').sort(),
  iterable: typeof billing.accounts.list()[Symbol.asyncIterator],
  operations: Object.keys(sdk.operations).length,
}));
`,
    );
    const out = JSON.parse(execFileSync(process.execPath, [script], { cwd: consumer, encoding: 'utf8' }));
    expect(out.exports).toEqual(expect.arrayContaining(['Billing', 'BillingClient', 'BillingApiError', 'BillingConnectionError', 'BillingTimeoutError', 'BillingError', 'WebhookVerificationError', 'ListPromise', 'verifyWebhook', 'operations']));
    expect(out.groups).toEqual(['accounts', 'apiKeys', 'balances', 'charges', 'companies', 'events', 'grants', 'plans', 'refills', 'spendLimits', 'testClock', 'transactions', 'usage', 'webhooks']);
    expect(out.iterable).toBe('function');
    expect(out.operations).toBeGreaterThan(40);
  });

  it('type-checks a consumer against the published declarations, under the strictest module settings', () => {
    fs.writeFileSync(
      path.join(consumer, 'consumer.ts'),
      `import { Billing, BillingApiError, verifyWebhook, type Account, type Balance, type WebhookPayload } from '@billing/sdk';
export async function run(billing: Billing, body: string, headers: Headers): Promise<[Account[], Balance, WebhookPayload]> {
  const accounts: Account[] = [];
  for await (const account of billing.accounts.list({ limit: 10 })) accounts.push(account);
  const balance = await billing.balances.create(accounts[0].id, 'credits', { amount: '1.5' });
  try {
    await billing.events.record(accounts[0].id, { type: 'chat', gate_on_balance: true });
  } catch (err) {
    if (err instanceof BillingApiError && err.status === 402) console.log(err.rejected_event_id, err.request_id);
  }
  const raw = await billing.request('get', '/v1/accounts/{account_id}/balances', { path: { account_id: accounts[0].id } });
  console.log(raw.has_more);
  return [accounts, balance, await verifyWebhook(body, headers, 'whsec_x')];
}
`,
    );
    fs.writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [], strict: true, exactOptionalPropertyTypes: true, noEmit: true }, files: ['consumer.ts'] }),
    );
    fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ type: 'module' }));
    let out = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', path.join(consumer, 'tsconfig.json')], { cwd: consumer, encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      out = String((err as { stdout?: string }).stdout ?? err);
    }
    expect(out).toBe('');
  });
});
