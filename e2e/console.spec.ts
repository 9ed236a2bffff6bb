import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from '@playwright/test';

function demo() {
  return JSON.parse(fs.readFileSync(path.join('.test-data/e2e', 'demo.json'), 'utf8')) as {
    company_id: string;
    api_key: string;
    console_email: string;
    console_password: string;
  };
}

test('an admin signs in, sees the accounts, and signs out', async ({ page, request }, info) => {
  const creds = demo();
  const auth = { Authorization: `Basic ${Buffer.from(`${creds.company_id}:${creds.api_key}`).toString('base64')}` };
  const created = await request.post(`/v1/companies/${creds.company_id}/accounts`, { headers: auth, data: { name: 'Ada Lovelace', email: 'ada@example.com' } });
  expect(created.status()).toBe(200);

  await page.goto('/console');
  await expect(page).toHaveURL(/\/console\/sign-in/);
  await page.getByLabel('Email').fill(creds.console_email);
  await page.getByLabel('Password').fill('wrong password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('do not match');

  await page.getByLabel('Password').fill(creds.console_password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Accounts' })).toBeVisible();
  await expect(page.getByRole('cell', { name: 'Ada Lovelace' })).toBeVisible();
  await page.screenshot({ path: info.outputPath('console-accounts.png'), fullPage: true });

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/console\/sign-in/);
  await page.goto('/console');
  await expect(page).toHaveURL(/\/console\/sign-in/);
});
