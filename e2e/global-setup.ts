import fs from 'node:fs';
import path from 'node:path';
import type { FullConfig } from '@playwright/test';
import { companyFile, e2eAdminToken } from './companies';

/**
 * Runs once the server answers: each Playwright worker gets a company of its own, registered
 * through the operator's API like any company, so that tests in parallel workers never see each
 * other's accounts, events, dashboard totals or admins. (With an operator token the server seeds
 * no demo company: the quick start's demo company is tested where the server starts without one,
 * lib/boot.test.ts and app/public-surface.test.ts.)
 */
export default async function globalSetup(config: FullConfig): Promise<void> {
  const baseURL = config.projects[0].use.baseURL!;
  for (let i = 0; i < config.workers; i++) {
    const email = `admin-${i}@demo.local`;
    const password = `worker ${i} password of the e2e run`;
    const res = await fetch(`${baseURL}/v1/companies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${e2eAdminToken}`, 'content-type': 'application/json' },
      // Named as the quick start's demo company.
      body: JSON.stringify({ name: 'Demo Company', email, password, processor_key: `sk_test_e2e_${i}`, processor_publishable_key: `pk_test_e2e_${i}` }),
    });
    const body = (await res.json()) as { data?: { id: string; api_key: string } };
    if (res.status !== 200 || !body.data) throw new Error(`registering the company of worker ${i}: ${res.status} ${JSON.stringify(body)}`);
    const file = companyFile(i);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ company_id: body.data.id, api_key: body.data.api_key, console_email: email, console_password: password }, null, 2), { mode: 0o600 });
  }
}
