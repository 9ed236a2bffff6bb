import { expect, test } from '@playwright/test';
import { demo } from './helpers';

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
  await expect(page.getByRole('alert').filter({ hasText: 'do not match' })).toBeVisible();

  await page.getByLabel('Password').fill(creds.console_password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Dashboard' })).toBeVisible();
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Accounts' }).click();
  await expect(page.getByRole('heading', { name: 'Accounts' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Ada Lovelace' }).first()).toBeVisible();
  await page.screenshot({ path: info.outputPath('console-accounts.png'), fullPage: true });
  // The session cookie, as someone who copied it would have it.
  const copied = (await page.context().cookies()).filter((c) => c.name.includes('session-token'));
  expect(copied.length).toBeGreaterThan(0);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/console\/sign-in/);
  await page.goto('/console');
  await expect(page).toHaveURL(/\/console\/sign-in/);
  // Signing out ended the session itself: the copied cookie no longer opens the console.
  await page.context().addCookies(copied);
  await page.goto('/console');
  await expect(page).toHaveURL(/\/console\/sign-in/);
});
