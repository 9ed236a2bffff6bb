import { expect, test } from '@playwright/test';
import { api, consoleDemo, section, shot, signIn } from './console-helpers';

test('an admin issues an API key (shown once), sees it used, and revokes it', async ({ page, request }, info) => {
  await signIn(page);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'API keys' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'API keys' })).toBeVisible();
  const keys = page.getByRole('region', { name: 'API keys' });
  const before = await keys.getByRole('row').count();
  await section(page, 'Issue a key').getByRole('button', { name: 'Issue a new key' }).click();
  const secretBox = page.getByLabel(/^API key \(use it as the password/);
  await expect(secretBox).toHaveValue(/^sk_/);
  const secret = await secretBox.inputValue();
  const last4 = secret.slice(-4);
  await expect(keys.getByRole('row')).toHaveCount(before + 1);
  const row = keys.getByRole('row', { name: new RegExp(`…${last4}`) });
  await expect(row).toContainText('active');
  await expect(row).toContainText('Never');

  // The new key works, and its use is recorded.
  const call = api(request, { company_id: consoleDemo().company_id, api_key: secret });
  expect((await call('get', '/v1/companies')).status).toBe(200);
  await page.reload();
  await expect(row).not.toContainText('Never');
  await expect(page.getByLabel(/^API key \(use it as the password/)).toHaveCount(0); // shown once only
  await shot(page, info, 'api-keys');

  await row.getByRole('button', { name: 'Revoke' }).click();
  await expect(row.getByRole('button', { name: `Revoke key …${last4}` })).toBeFocused();
  await row.getByRole('button', { name: `Revoke key …${last4}` }).click();
  // The row itself now says so (its revoke form is gone).
  await expect(row.getByRole('cell').nth(1)).toHaveText('revoked');
  await expect(row).toContainText('Revoked 20');
  await shot(page, info, 'api-keys-revoked');
});

test('a key revoked in the console stops working at once', async ({ page, request }) => {
  await signIn(page);
  await page.goto('/console/api-keys');
  await section(page, 'Issue a key').getByRole('button', { name: 'Issue a new key' }).click();
  const secret = await page.getByLabel(/^API key \(use it as the password/).inputValue();
  const call = api(request, { company_id: consoleDemo().company_id, api_key: secret });
  expect((await call('get', '/v1/companies')).status).toBe(200);
  const row = page.getByRole('region', { name: 'API keys' }).getByRole('row', { name: new RegExp(`…${secret.slice(-4)}`) });
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.getByRole('button', { name: `Revoke key …${secret.slice(-4)}` }).click();
  await expect(row.getByRole('cell').nth(1)).toHaveText('revoked');
  expect((await call('get', '/v1/companies')).status).toBe(401);
});
