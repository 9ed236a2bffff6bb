import fs from 'node:fs';
import { expect, test, type Download } from '@playwright/test';
import { csvRecords } from '../lib/testing/csv';
import { api, section, shot, signIn, uniq } from './console-helpers';

async function downloaded(download: Download): Promise<Record<string, string>[]> {
  return csvRecords(fs.readFileSync((await download.path())!, 'utf8'));
}

test('an admin finds an account by its external id and downloads its events and ledger as CSV matching the API', async ({ page, request }, info) => {
  test.setTimeout(120_000);
  const call = api(request);
  const externalId = uniq('crm');
  const name = uniq('Jo "Export", Smith');
  const created = await call('post', '/v1/companies/{company}/accounts', { name, email: 'jo@example.com', external_id: externalId });
  expect(created.status).toBe(200);
  const accountId = created.body.data.id as string;
  expect((await call('post', `/v1/accounts/${accountId}/balance/credits`, { amount: '10.5', reason: 'Welcome, "friend"' })).status).toBe(200);
  const batch = await call('post', '/v1/events', [
    { account_id: accountId, type: 'render, "hd"', cost_override: { amount: '0.1', denomination: 'credits' }, metadata: { note: 'a,b\nc' } },
    { account_id: accountId, type: 'query', cost_override: { amount: '0.000000000001', denomination: 'credits' } },
    { account_id: accountId, type: 'query', cost_override: { amount: '2', denomination: 'credits' } },
  ]);
  expect(batch.status).toBe(200);

  await signIn(page);
  await test.step('search the account list by the external id and see it on the account page', async () => {
    await page.goto('/console/accounts');
    await page.getByLabel('Search by name, email, external id or account id').fill(externalId.slice(2));
    await page.getByRole('button', { name: 'Search' }).click();
    await expect(page.getByRole('cell', { name: externalId })).toBeVisible();
    await page.getByRole('link', { name }).click();
    await expect(page.getByRole('heading', { level: 1, name })).toBeVisible();
    await expect(section(page, 'Plan and payment').getByText(externalId)).toBeVisible();
  });

  await test.step('download the filtered events', async () => {
    await page.goto(`/console/events?account_id=${accountId}&type=query`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download CSV of the filtered events' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^events-\d{4}-\d{2}-\d{2}\.csv$/);
    const rows = await downloaded(download);
    const listed = await call('get', `/v1/companies/{company}/events?account_id=${accountId}&type=query&limit=1000`);
    expect(rows.map((r) => r.id)).toEqual(listed.body.data.map((e: { id: string }) => e.id));
    expect(rows.map((r) => r.cost_amount)).toEqual(['2', '0.000000000001']);
    // The API answers JSON numbers; the CSV writes the same decimals as exact strings.
    expect(rows.map((r) => Number(r.cost_amount))).toEqual(listed.body.data.map((e: { cost: { amount: number } }) => e.cost.amount));
    for (const r of rows) expect(r).toMatchObject({ account_id: accountId, account_name: name, type: 'query', state: 'complete' });
    await shot(page, info, 'events-export');
  });

  await test.step("download the account's ledger", async () => {
    await page.goto(`/console/accounts/${accountId}/ledger`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download CSV' }).click()]);
    expect(download.suggestedFilename()).toContain(`ledger-${accountId}-`);
    const rows = await downloaded(download);
    const listed = (await call('get', `/v1/accounts/${accountId}/transactions?limit=1000`)).body.data as { id: string; description: string; amount: number; ending_balance: number; event_id: string | null }[];
    expect(rows.map((r) => r.id)).toEqual(listed.map((x) => x.id));
    expect(rows.map((r) => r.description)).toEqual(listed.map((x) => x.description));
    expect(rows.map((r) => Number(r.amount))).toEqual(listed.map((x) => x.amount));
    expect(rows.map((r) => Number(r.ending_balance))).toEqual(listed.map((x) => x.ending_balance));
    expect(rows.map((r) => r.amount)).toContain('-0.000000000001');
    expect(rows.map((r) => r.event_id || null)).toEqual(listed.map((x) => x.event_id));
    expect(rows[0].ending_balance).toBe('8.399999999999');
    expect(rows[rows.length - 1]).toMatchObject({ description: 'Welcome, "friend"', amount: '10.5' });
    await shot(page, info, 'ledger-export');
  });

  await test.step("another company's account is 404", async () => {
    const res = await page.request.get('/console/accounts/a_00000000000000000000000000/ledger/export');
    expect(res.status()).toBe(404);
  });
});
